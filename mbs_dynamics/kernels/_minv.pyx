# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The inverse mass matrix M(q)⁻¹ by the articulated-body route, without forming M, compiled.

Column j of M⁻¹ is the ABA's q̈ for τ = e_j with q̇ = 0 and no gravity (Featherstone, *Rigid
Body Dynamics Algorithms*, 2008, §7.3): all nv columns run through the ABA at once as 6 × nv
*sets* — force sets (the bias wrenches p^A_i of the nv unit torques) on the way up
and a motion set A_i (the accelerations) on the way down — as in Carpentier's
``computeMinverse`` of Pinocchio (Carpentier & Mansard, *Analytical derivatives of rigid body
dynamics algorithms*, RSS 2018, §IV). With I^A_i, U_i = I^A_i X_i and D_i = X_iᵀ U_i of the
ABA, all in one reference frame — the fixed base's, or a floating base's own (M⁻¹ does not
depend on the base pose) — where S_i = Ad_{C_i} X_i is joint i's screw (seed 000's body-fixed
X_i moved there), I^A_λ += I^A_i − U_i U_iᵀ / D_i needs no transformation and the force sets of
all bodies share one 6 × nv matrix F (a subtree's columns hold its bodies' sum), for the unit
torque of column j:

1. backward, leaves to root (the numerator is the ABA's u_i = τ_i − S_iᵀ p^A_i):
   ``M̃_ij = (δ_ij − S_iᵀ F[:, j]) / D_i``  (non-zero for j in the subtree of body i only),
   ``F[:, j] += U_i M̃_ij``  (the ABA's p^a = p^A + U u / D);
2. forward, root to leaves (q̈_i = (u_i − U_iᵀ A_λ) / D_i):
   ``M⁻¹_ij = M̃_ij − U_iᵀ A_λ[:, j] / D_i``,  ``A_i[:, j] = A_λ[:, j] + S_i M⁻¹_ij``,

for j ≥ i only (the upper triangle; the lower one by symmetry). Bodies are numbered depth-first,
so the subtree of body i holds the columns i … last(i). A floating base (body 0) is a 6-dof
joint with X = 1: ``M̃_00 = (I^A_0)⁻¹``, ``M̃_0j = −(I^A_0)⁻¹ F_0[:, j]`` and A_0[:, j] the base
rows of M⁻¹. Rows and columns follow Pinocchio's velocity layout (the base twist ``(linear,
angular)`` in the base frame), so the result equals ``pinocchio.computeMinverse`` (whose lower
triangle is left unfilled) and ``inv(pinocchio.crba)``. Work: O(n·d) for the sets up the tree
(d the depth) and O(n²) down it, no O(n³) factorisation.

Implementation (the same flops as ``computeMinverse``, fewer memory passes): each sweep loads a
set column once per body (the row of M̃ or M⁻¹ and the set update in one loop); a body and its
only child are done in one loop (the parent's motion set and the child's force-set update stay
in registers), so chains store half the sets; the loops are vectorised across columns (AVX2
and baseline clones, the same operations in the same order in both, -ffp-contract=off); the
floating base's six rows are one column pass; the lower triangle is copied once at the end.
"""
import numpy as np
cimport numpy as cnp

from mbs_dynamics.kernels._mat6 cimport chol6
from mbs_dynamics.kernels._data cimport (finite_result, REVOLUTE, Data, KModel, KWork, alias3,
                                         as_input, as_out, check_finite, check_quat, claim,
                                         out_mat, unclaim, vec)
from mbs_dynamics.kernels._spatial cimport body_inertia, compose, joint_pose, load_jet, screw

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* The two sweeps over the 6 x nv sets (row stride nv), each column j touched once per body:
       the set rows are loaded once, the row of M^-1 and the set update computed from them in the
       same loop (restrict: vectorised across columns). Compiled for AVX2 and the baseline
       (GCC's target_clones, picked at load time; other compilers: the baseline); with
       -ffp-contract=off both do the same operations in the same order (the same numbers). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define MINV_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define MINV_CLONES
    #endif
    /* six rows of a set at row stride nv; r . x[:, j] for six coefficients r0..r5 */
    #define MINV_ROWS(X, P) double* __restrict__ X##0 = (P); \
        double* __restrict__ X##1 = X##0 + nv; double* __restrict__ X##2 = X##0 + 2 * nv; \
        double* __restrict__ X##3 = X##0 + 3 * nv; double* __restrict__ X##4 = X##0 + 4 * nv; \
        double* __restrict__ X##5 = X##0 + 5 * nv
    #define MINV_COEF(c, v, f) const double c##0 = f(v, 0), c##1 = f(v, 1), c##2 = f(v, 2), \
        c##3 = f(v, 3), c##4 = f(v, 4), c##5 = f(v, 5)
    #define MINV_DOT(c, x) (c##0 * x##0 + c##1 * x##1 + c##2 * x##2 + c##3 * x##3 \
        + c##4 * x##4 + c##5 * x##5)
    /* the six rows are distinct (row stride nv): no dependence between iterations */
    #if defined(__GNUC__) && !defined(__clang__)
    #define MINV_IVDEP _Pragma("GCC ivdep")
    #else
    #define MINV_IVDEP
    #endif
    #define MINV_AT(v, r) ((v)[r])
    #define MINV_NEGD(v, r) (-Dinv * (v)[r])
    #define MINV_NEGDP(v, r) (-Dp * (v)[r])
    #define MINV_TIMESD(v, r) ((v)[r] * Dinv)
    #define MINV_TIMESDK(v, r) ((v)[r] * Dk)
    #define MINV_LOAD(x, X, j) double x##0 = X##0[j], x##1 = X##1[j], x##2 = X##2[j], \
        x##3 = X##3[j], x##4 = X##4[j], x##5 = X##5[j]
    #define MINV_AXPY(y, x, c, r) y##0 = x##0 + c##0 * (r); y##1 = x##1 + c##1 * (r); \
        y##2 = x##2 + c##2 * (r); y##3 = x##3 + c##3 * (r); y##4 = x##4 + c##4 * (r); \
        y##5 = x##5 + c##5 * (r)
    #define MINV_STORE(X, j, x) X##0[j] = x##0; X##1[j] = x##1; X##2[j] = x##2; \
        X##3[j] = x##3; X##4[j] = x##4; X##5[j] = x##5
    MINV_CLONES static void minv_backward(long nv, int nb, int fb, const int* parent,
                                          const double* last, const double* Sw, long sst,
                                          const double* Uw, const double* D,
                                          double* __restrict__ F, double* __restrict__ Mi) {
        /* leaves to root: M~_ij = (delta_ij - S_i . F[:, j]) / D_i for j in the subtree
           c..L of body i, then F[:, j] += U_i M~_ij (no parent: F is not needed any more).
           A body i whose parent i - 1 has no other child is done together with it: F[:, j]
           after i's update stays in registers for the parent's row and update (the same
           operations in the same order) */
        MINV_ROWS(F, F);
        int i = nb - 1;
        while (i >= fb) {
            const long c = i + 5L * fb, L = (long) last[i] + 5L * fb;
            const double* S = Sw + sst * c;
            const double* U = Uw + 6 * c;
            const double Dinv = 1.0 / D[i];
            double* __restrict__ row = Mi + c * nv;
            MINV_COEF(s, S, MINV_NEGD);
            MINV_COEF(u, U, MINV_AT);
            long j;
            row[c] = Dinv;
            if (i - 1 >= fb && parent[i] == i - 1 && last[i] == last[i - 1]) {
                const long cp = c - 1;
                const double Dp = 1.0 / D[i - 1];
                double* __restrict__ rowp = Mi + cp * nv;
                MINV_COEF(t, Sw + sst * cp, MINV_NEGDP);
                MINV_COEF(w, Uw + 6 * cp, MINV_AT);
                double r, q;
                rowp[cp] = Dp;
                MINV_LOAD(f, F, c);
                MINV_AXPY(f, f, u, Dinv);
                q = MINV_DOT(t, f);
                rowp[c] = q;
                if (parent[i - 1] >= 0) {
                    MINV_AXPY(f, f, w, q);
                    MINV_STORE(F, c, f);
                    F0[cp] += w0 * Dp; F1[cp] += w1 * Dp; F2[cp] += w2 * Dp;
                    F3[cp] += w3 * Dp; F4[cp] += w4 * Dp; F5[cp] += w5 * Dp;
                    MINV_IVDEP
                    for (j = c + 1; j <= L; j++) {
                        MINV_LOAD(g, F, j);
                        r = MINV_DOT(s, g);
                        row[j] = r;
                        MINV_AXPY(g, g, u, r);
                        q = MINV_DOT(t, g);
                        rowp[j] = q;
                        MINV_AXPY(g, g, w, q);
                        MINV_STORE(F, j, g);
                    }
                } else {
                    MINV_IVDEP
                    for (j = c + 1; j <= L; j++) {
                        MINV_LOAD(g, F, j);
                        r = MINV_DOT(s, g);
                        row[j] = r;
                        MINV_AXPY(g, g, u, r);
                        rowp[j] = MINV_DOT(t, g);
                    }
                }
                i -= 2;
                continue;
            }
            if (parent[i] >= 0) {
                F0[c] += u0 * Dinv; F1[c] += u1 * Dinv; F2[c] += u2 * Dinv;
                F3[c] += u3 * Dinv; F4[c] += u4 * Dinv; F5[c] += u5 * Dinv;
                MINV_IVDEP
                for (j = c + 1; j <= L; j++) {
                    MINV_LOAD(g, F, j);
                    const double r = MINV_DOT(s, g);
                    row[j] = r;
                    MINV_AXPY(g, g, u, r);
                    MINV_STORE(F, j, g);
                }
            } else {
                MINV_IVDEP
                for (j = c + 1; j <= L; j++) {
                    MINV_LOAD(g, F, j);
                    row[j] = MINV_DOT(s, g);
                }
            }
            i -= 1;
        }
    }
    MINV_CLONES static void minv_forward(long nv, int nb, int fb, const int* parent,
                                         const double* last, const double* Sw, long sst,
                                         const double* Uw, const double* D,
                                         double* __restrict__ A, long sz,
                                         double* __restrict__ Mi) {
        /* root to leaves: M^-1_ij = M~_ij - U_i . A_lambda[:, j] / D_i (M~_ij = 0 beyond the
           subtree end L), and the motion set A_i[:, j] = A_lambda[:, j] + S_i M^-1_ij (bodies
           with children only), j >= c. A body whose only child is i + 1 is done together with
           it: its motion set stays in registers (never stored) */
        int i = fb;
        while (i < nb) {
            const long c = i + 5L * fb, L = (long) last[i] + 5L * fb;
            const int par = parent[i];
            double* __restrict__ row = Mi + c * nv;
            MINV_ROWS(X, A + i * sz);
            MINV_COEF(S, Sw + sst * c, MINV_AT);
            long j;
            double r, q;
            if (par >= 0) {
                MINV_ROWS(P, A + par * sz);
                const double Dinv = 1.0 / D[i];
                MINV_COEF(u, Uw + 6 * c, MINV_TIMESD);
                if (i + 1 < nb && parent[i + 1] == i && last[i + 1] == last[i]) {
                    const long ck = c + 1;
                    const double Dk = 1.0 / D[i + 1];
                    double* __restrict__ rowk = Mi + ck * nv;
                    MINV_ROWS(Y, A + (i + 1) * sz);
                    MINV_COEF(T, Sw + sst * ck, MINV_AT);
                    MINV_COEF(v, Uw + 6 * ck, MINV_TIMESDK);
                    MINV_LOAD(a, P, c);
                    row[c] -= MINV_DOT(u, a);
                    if (L > ck) {   /* body i + 1 has children: its motion set is stored */
                        MINV_IVDEP
                        for (j = ck; j <= L; j++) {
                            MINV_LOAD(a, P, j);
                            r = row[j] - MINV_DOT(u, a);
                            row[j] = r;
                            MINV_AXPY(a, a, S, r);
                            q = rowk[j] - MINV_DOT(v, a);
                            rowk[j] = q;
                            MINV_AXPY(a, a, T, q);
                            MINV_STORE(Y, j, a);
                        }
                        MINV_IVDEP
                        for (; j < nv; j++) {
                            MINV_LOAD(a, P, j);
                            r = -MINV_DOT(u, a);
                            row[j] = r;
                            MINV_AXPY(a, a, S, r);
                            q = -MINV_DOT(v, a);
                            rowk[j] = q;
                            MINV_AXPY(a, a, T, q);
                            MINV_STORE(Y, j, a);
                        }
                    } else {
                        MINV_IVDEP
                        for (j = ck; j <= L; j++) {
                            MINV_LOAD(a, P, j);
                            r = row[j] - MINV_DOT(u, a);
                            row[j] = r;
                            MINV_AXPY(a, a, S, r);
                            rowk[j] -= MINV_DOT(v, a);
                        }
                        MINV_IVDEP
                        for (; j < nv; j++) {
                            MINV_LOAD(a, P, j);
                            r = -MINV_DOT(u, a);
                            row[j] = r;
                            MINV_AXPY(a, a, S, r);
                            rowk[j] = -MINV_DOT(v, a);
                        }
                    }
                    i += 2;
                    continue;
                }
                if (L > c) {
                    MINV_IVDEP
                    for (j = c; j <= L; j++) {
                        MINV_LOAD(a, P, j);
                        r = row[j] - MINV_DOT(u, a);
                        row[j] = r;
                        MINV_AXPY(a, a, S, r);
                        MINV_STORE(X, j, a);
                    }
                    MINV_IVDEP
                    for (; j < nv; j++) {
                        MINV_LOAD(a, P, j);
                        r = -MINV_DOT(u, a);
                        row[j] = r;
                        MINV_AXPY(a, a, S, r);
                        MINV_STORE(X, j, a);
                    }
                } else {  /* a leaf: no motion set */
                    MINV_LOAD(a, P, c);
                    row[c] -= MINV_DOT(u, a);
                    MINV_IVDEP
                    for (j = c + 1; j < nv; j++) {
                        MINV_LOAD(b, P, j);
                        row[j] = -MINV_DOT(u, b);
                    }
                }
            } else {
                MINV_IVDEP
                for (j = L + 1; j < nv; j++)
                    row[j] = 0.0;
                if (L > c)
                    MINV_IVDEP
                    for (j = c; j < nv; j++) {
                        r = row[j];
                        X0[j] = S0 * r; X1[j] = S1 * r; X2[j] = S2 * r;
                        X3[j] = S3 * r; X4[j] = S4 * r; X5[j] = S5 * r;
                    }
            }
            i += 1;
        }
    }
    #define MINV_SOLVE6 \
        y0 = y0 * d0; \
        y1 = (y1 + l10 * y0) * d1; \
        y2 = ((y2 + l20 * y0) + l21 * y1) * d2; \
        y3 = (((y3 + l30 * y0) + l31 * y1) + l32 * y2) * d3; \
        y4 = ((((y4 + l40 * y0) + l41 * y1) + l42 * y2) + l43 * y3) * d4; \
        y5 = (((((y5 + l50 * y0) + l51 * y1) + l52 * y2) + l53 * y3) + l54 * y4) * d5; \
        y5 = y5 * d5; \
        y4 = (y4 + l54 * y5) * d4; \
        y3 = ((y3 + l43 * y4) + l53 * y5) * d3; \
        y2 = (((y2 + l32 * y3) + l42 * y4) + l52 * y5) * d2; \
        y1 = ((((y1 + l21 * y2) + l31 * y3) + l41 * y4) + l51 * y5) * d1; \
        y0 = (((((y0 + l10 * y1) + l20 * y2) + l30 * y3) + l40 * y4) + l50 * y5) * d0;
    MINV_CLONES static void minv_base(long nv, const double* Lc, const double* __restrict__ F,
                                      double* __restrict__ A, double* __restrict__ Mi) {
        /* the floating base's rows of M^-1 = its motion set A_0 = (I^A_0)^-1 [1 | -F[:, 6:]]
           (columns in Pinocchio's order), by the Cholesky factor Lc of chol6 (1/L_ii on its
           diagonal): forward then back substitution per column, the six values in registers,
           vectorised across the columns; written to A_0's rows and M^-1's rows pub(a) */
        const double l10 = -Lc[6], l20 = -Lc[12], l21 = -Lc[13], l30 = -Lc[18], l31 = -Lc[19], l32 = -Lc[20], l40 = -Lc[24], l41 = -Lc[25], l42 = -Lc[26], l43 = -Lc[27], l50 = -Lc[30], l51 = -Lc[31], l52 = -Lc[32], l53 = -Lc[33], l54 = -Lc[34];
        const double d0 = Lc[0], d1 = Lc[7], d2 = Lc[14], d3 = Lc[21], d4 = Lc[28], d5 = Lc[35];
        MINV_ROWS(X, A);
        MINV_ROWS(G, (double*) F);
        double* __restrict__ M0 = Mi + 3 * nv;
        double* __restrict__ M1 = Mi + 4 * nv;
        double* __restrict__ M2 = Mi + 5 * nv;
        double* __restrict__ M3 = Mi + 0 * nv;
        double* __restrict__ M4 = Mi + 1 * nv;
        double* __restrict__ M5 = Mi + 2 * nv;
        long j;
        for (j = 0; j < 6; j++) {
            const long k = j < 3 ? j + 3 : j - 3;   /* the row with 1 in column j */
            double y0 = k == 0, y1 = k == 1, y2 = k == 2, y3 = k == 3, y4 = k == 4, y5 = k == 5;
            MINV_SOLVE6
            X0[j] = y0; M0[j] = y0; X1[j] = y1; M1[j] = y1; X2[j] = y2; M2[j] = y2; X3[j] = y3; M3[j] = y3; X4[j] = y4; M4[j] = y4; X5[j] = y5; M5[j] = y5;
        }
        MINV_IVDEP
        for (j = 6; j < nv; j++) {
            double y0 = -G0[j], y1 = -G1[j], y2 = -G2[j], y3 = -G3[j], y4 = -G4[j], y5 = -G5[j];
            MINV_SOLVE6
            X0[j] = y0; M0[j] = y0; X1[j] = y1; M1[j] = y1; X2[j] = y2; M2[j] = y2; X3[j] = y3; M3[j] = y3; X4[j] = y4; M4[j] = y4; X5[j] = y5; M5[j] = y5;
        }
    }
    static inline double minv_art(const double* __restrict__ S, const double* __restrict__ Y,
                                  double* __restrict__ U) {
        /* U = I S for the symmetric 6 x 6 Y = I (its lower triangle read); returns D = S . U */
        U[0] = Y[0] * S[0] + Y[6] * S[1] + Y[12] * S[2] + Y[18] * S[3] + Y[24] * S[4] + Y[30] * S[5];
        U[1] = Y[6] * S[0] + Y[7] * S[1] + Y[13] * S[2] + Y[19] * S[3] + Y[25] * S[4] + Y[31] * S[5];
        U[2] = Y[12] * S[0] + Y[13] * S[1] + Y[14] * S[2] + Y[20] * S[3] + Y[26] * S[4] + Y[32] * S[5];
        U[3] = Y[18] * S[0] + Y[19] * S[1] + Y[20] * S[2] + Y[21] * S[3] + Y[27] * S[4] + Y[33] * S[5];
        U[4] = Y[24] * S[0] + Y[25] * S[1] + Y[26] * S[2] + Y[27] * S[3] + Y[28] * S[4] + Y[34] * S[5];
        U[5] = Y[30] * S[0] + Y[31] * S[1] + Y[32] * S[2] + Y[33] * S[3] + Y[34] * S[4] + Y[35] * S[5];
        return S[0] * U[0] + S[1] * U[1] + S[2] * U[2] + S[3] * U[3] + S[4] * U[4] + S[5] * U[5];
    }
    static inline void minv_art_parent(const double* __restrict__ Y, const double* __restrict__ U,
                                       double Dinv, double* __restrict__ P) {
        /* P += Y - U U^T / D (Y = I^A_i) on the lower triangle */
        double x;
        x = U[0] * Dinv;
        P[0] += Y[0] - x * U[0];
        x = U[1] * Dinv;
        P[6] += Y[6] - x * U[0]; P[7] += Y[7] - x * U[1];
        x = U[2] * Dinv;
        P[12] += Y[12] - x * U[0]; P[13] += Y[13] - x * U[1]; P[14] += Y[14] - x * U[2];
        x = U[3] * Dinv;
        P[18] += Y[18] - x * U[0]; P[19] += Y[19] - x * U[1]; P[20] += Y[20] - x * U[2]; P[21] += Y[21] - x * U[3];
        x = U[4] * Dinv;
        P[24] += Y[24] - x * U[0]; P[25] += Y[25] - x * U[1]; P[26] += Y[26] - x * U[2]; P[27] += Y[27] - x * U[3]; P[28] += Y[28] - x * U[4];
        x = U[5] * Dinv;
        P[30] += Y[30] - x * U[0]; P[31] += Y[31] - x * U[1]; P[32] += Y[32] - x * U[2]; P[33] += Y[33] - x * U[3]; P[34] += Y[34] - x * U[4]; P[35] += Y[35] - x * U[5];
    }
    MINV_CLONES static int minv_mirror(long n, double* __restrict__ M) {
        /* M's strictly lower triangle = the transpose of its upper one, in 4 x 4 tiles (rows
           i0..i0+3 read contiguously, written as four consecutive entries of rows j0..j0+3);
           1 if every entry of the upper triangle (diagonal included) is finite, by the exponent
           bits (a contiguous scan of each row's upper part first) */
        uint64_t acc = 0;
        long i0, j0, r, t, ie, je;
        double x;
        for (r = 0; r < n; r++) {
            const uint64_t* __restrict__ p = (const uint64_t*) (M + r * n);
            for (t = r; t < n; t++)
                acc |= (p[t] & 0x7FF0000000000000ULL) + 0x0010000000000000ULL;
        }
        for (i0 = 0; i0 < n; i0 += 4) {
            ie = i0 + 4 < n ? i0 + 4 : n;
            for (r = i0; r < ie; r++)          /* the diagonal tile */
                for (t = r + 1; t < ie; t++)
                    M[t * n + r] = M[r * n + t];
            if (ie - i0 == 4) {
                for (j0 = ie; j0 + 4 <= n; j0 += 4) {
                    double b[16];
                    for (r = 0; r < 4; r++)
                        for (t = 0; t < 4; t++)
                            b[4 * t + r] = M[(i0 + r) * n + j0 + t];
                    for (t = 0; t < 4; t++)
                        for (r = 0; r < 4; r++)
                            M[(j0 + t) * n + i0 + r] = b[4 * t + r];
                }
            } else {
                j0 = ie;
            }
            for (; j0 < n; j0 += 4) {
                je = j0 + 4 < n ? j0 + 4 : n;
                for (r = i0; r < ie; r++)
                    for (t = j0; t < je; t++) {
                        x = M[r * n + t];
                        M[t * n + r] = x;
                    }
            }
        }
        return !(acc >> 63);
    }
    """
    int minv_mirror(long n, double* M) noexcept nogil
    void minv_base(long nv, const double* Lc, const double* F, double* A, double* Mi) noexcept nogil
    double minv_art(const double* S, const double* I, double* U) noexcept nogil
    void minv_art_parent(const double* I, const double* U, double Dinv, double* P) noexcept nogil
    void minv_backward(long nv, int nb, int fb, const int* parent, const double* last,
                       const double* Sw, long sst, const double* Uw, const double* D, double* F,
                       double* Mi) noexcept nogil
    void minv_forward(long nv, int nb, int fb, const int* parent, const double* last,
                      const double* Sw, long sst, const double* Uw, const double* D, double* A,
                      long sz, double* Mi) noexcept nogil


cdef inline void frame_inertia(const KModel* m, int i, const double* P, double* I) noexcept nogil:
    """The lower triangle of I (6×6 row-major; what the articulated-inertia pass and ``chol6``
    read) = body i's inertia in the reference frame at pose P = (R, p):
    [[Θ', h̃'], [−h̃', m 1]] with (m, h', Θ') from :func:`body_inertia` (the parallel-axis
    theorem; seed 004 eq. 24 for the body-frame form)."""
    cdef double B[13]
    cdef double ms = m.mass[i], h0, h1, h2
    cdef int a, b
    body_inertia(m, i, P, B)
    for a in range(3):
        for b in range(a + 1):
            I[6 * a + b] = B[4 + 3 * a + b]
            I[6 * (3 + a) + 3 + b] = ms if a == b else 0.0
    h0, h1, h2 = B[1], B[2], B[3]
    # −h̃ (bottom left)
    I[18], I[19], I[20] = 0.0, h2, -h1
    I[24], I[25], I[26] = -h2, 0.0, h0
    I[30], I[31], I[32] = h1, -h0, 0.0


cdef int minv_core(const KModel* m, KWork* w, double* F, double* Mi, bint have_T) noexcept nogil:
    """M⁻¹ (nv × nv, both triangles) into Mi at the joint positions in ``w.qj`` row 0 (with
    ``have_T`` the joint poses w.T are already there, e.g. from the ABA kernel); F: the ``Fs``
    scratch. 1 if a movable subtree has no mass (I^A singular), 2 if an entry of M⁻¹ is not
    finite (overflow), else 0. Overwrites w.IA, w.D, w.Cw,
    w.Sw, w.Sdw.

    The sets live in one reference frame — the fixed base's, or the floating base's own (M⁻¹
    does not depend on the base pose) — where moving a set to the parent is the identity: the
    force sets of all bodies share one 6 × nv matrix (a subtree's columns hold the sum of its
    bodies' wrenches), X_i and U_i are moved to that frame once per body (w.Sw, w.Sdw), and
    the motion set of body i is A_λ + S_i M⁻¹_i·. The articulated inertias are formed there
    too (as Pinocchio's ``computeMinverse``): each body inertia moved once, then plain sums."""
    cdef int nb = m.nb, fb = m.fb, i, a, par
    cdef double* P
    # poses, X_i and the body inertias in the reference frame
    for i in range(nb):
        P = w.Cw + 12 * i
        par = m.parent[i]
        if i < fb:
            for a in range(12):
                P[a] = 1.0 if a in (0, 4, 8) else 0.0
        else:
            if not have_T:
                joint_pose(m, i, w.qj[i], w.T + 12 * i)
            if par >= 0:
                compose(w.Cw + 12 * par, w.T + 12 * i, P)
            else:
                for a in range(12):
                    P[a] = w.T[12 * i + a]
            screw(P, m.axis + 3 * i, m.jtype[i] == REVOLUTE, w.Sw + 6 * (i + 5 * fb))
        frame_inertia(m, i, P, w.IA + 36 * i)
    return minv_solve(m, w, F, Mi, w.Sw, 6)


cdef int minv_solve(const KModel* m, KWork* w, double* F, double* Mi, const double* Sw,
                    int sst) noexcept nogil:
    """The algebra of :func:`minv_core` once the geometry is in the reference frame: w.IA holds
    each body's inertia (6×6, row-major), ``Sw + sst·c`` the screw S_c of velocity column c
    (non-base columns; the base's are the unit screws). M⁻¹ into Mi (both triangles); F: the
    ``Fs`` scratch. 1 if a movable subtree has no mass, 2 if an entry of M⁻¹ is not finite
    (overflow), else 0. Overwrites w.IA, w.D, w.Sdw."""
    cdef int nb = m.nb, fb = m.fb, nv = m.nv, sz = 6 * m.nv, i, j, a, b, c, par
    cdef double* A = F                 # (nb, 6, nv) motion sets
    cdef double* Fc = F + nb * sz      # (6, nv) the force sets
    cdef double* last = Fc + sz        # (nb,) subtree ends
    cdef double* Uw
    cdef double* row
    cdef double* chol = w.S + 180
    cdef double D
    cdef double* Ia
    # subtree ends (depth-first numbering: the subtree of body i is i … last[i])
    for i in range(nb):
        last[i] = i
    # articulated inertias, leaves to root, in the reference frame (no congruence: moving an
    # inertia to the parent is the identity there): U_i = I^A_i S_i, D_i = S_iᵀ U_i,
    # I^A_λ += I^A_i − U_i U_iᵀ / D_i — on the lower triangles only (symmetric)
    for i in range(nb - 1, fb - 1, -1):
        c = i + 5 * fb
        Uw = w.Sdw + 6 * c
        Ia = w.IA + 36 * i
        D = minv_art(Sw + sst * c, Ia, Uw)
        if not (D > 0.0):
            return 1
        w.D[i] = D
        par = m.parent[i]
        if par >= 0:
            minv_art_parent(Ia, Uw, 1.0 / D, w.IA + 36 * par)
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par >= 0 and last[i] > last[par]:
            last[par] = last[i]
    for i in range(sz):
        Fc[i] = 0.0
    # ---- backward: M̃ rows and the force sets
    minv_backward(nv, nb, fb, m.parent, last, Sw, sst, w.Sdw, w.D, Fc, Mi)
    # ---- the floating base: its rows of M⁻¹ are (I^A_0)⁻¹ [1 | −F_0[:, 6:]] (M̃_00 = (I^A_0)⁻¹,
    # M̃_0j = −(I^A_0)⁻¹ F_0[:, j]), = its motion set A_0: solved by the Cholesky factor column
    # by column (vectorised across the columns), written to A_0 and M⁻¹'s base rows
    if fb:
        if chol6(w.IA, chol):
            return 1
        minv_base(nv, chol, Fc, A, Mi)
    # ---- forward: the corrections from the parents' motion sets, and the motion sets
    minv_forward(nv, nb, fb, m.parent, last, Sw, sst, w.Sdw, w.D, A, sz, Mi)
    return 0 if minv_mirror(nv, Mi) else 2


def _singular():
    raise ValueError("the mass matrix is singular: a movable joint moves no mass (check the "
                     "URDF's inertials)")


cdef object _inverse_mass_matrix(Data d, q, out):
    cdef KModel* m = &d.m
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    cdef Py_ssize_t nv = m.nv, nq = m.nq, N = 1, s
    cdef int err = 0
    if batch:
        q = as_input(q, "q", 2, (-1, m.nq))
        N = q.shape[0]
        out = as_out(out, "out", (N, nv, nv))
    else:
        q = vec(q, "q", m.nq)
        out = out_mat(out, nv, nv)
    check_finite(q, "q")
    check_quat(m, q, "q")
    res = alias3(out, q, None, None)
    cdef double* F = <double*> cnp.PyArray_DATA(d.arrays["Fs"])
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef KWork* w = &d.w
    if not batch:  # a single sample: no GIL round trip
        load_jet(m, w, pq, NULL, 0)
        err = minv_core(m, w, F, po, False)
    else:
        with nogil:
            for s in range(N):
                load_jet(m, w, pq + s * nq, NULL, 0)
                err = minv_core(m, w, F, po + s * nv * nv, False)
                if err:
                    break
    if err == 1:
        _singular()
    if err:  # 2: an entry overflowed (the kernel checked every entry): finite_result's message
        finite_result(res, "inverse_mass_matrix")
    if res is not out:
        out[...] = res
    return out


def inverse_mass_matrix(Data d, q, out=None):
    """M(q)⁻¹ (nv, nv) at q (nq,), or (N, nv, nv) for q (N, nq); ``out`` optional."""
    claim(d)
    try:
        return _inverse_mass_matrix(d, q, out)
    finally:
        unclaim(d)
