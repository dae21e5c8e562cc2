/* Batch kernels over blocks of MBS_L samples at once ("structure of arrays"), issue 21 item 4.
 *
 * The single-sample kernels of _rnea.pyx walk the tree once per sample; here every quantity of
 * the walk is a row of MBS_L lanes (one per sample), so each scalar operation of the recursion
 * becomes a loop over the lanes that the compiler turns into SIMD instructions. The operations,
 * and their order, are exactly those of the single-sample kernels (rnea0, rnea_jet with K = 2 in
 * _rnea.pyx and the helpers of _spatial.pxd), and the module is compiled with
 * -ffp-contract=off, so a batch gives bit for bit the single calls' numbers.
 *
 * mbs_sincos is the sine/cosine of every joint pose (single calls and batches alike): Cody-Waite
 * reduction by π/2 and the Cephes minimax polynomials on [−π/4, π/4] (about 1 ulp), branch-free
 * so that it vectorises; |x| > 1e5 goes to libm's sin and cos.
 *
 * The block functions are compiled for AVX-512, AVX2 and the baseline (GCC's target_clones, the
 * loader picks one for the CPU at hand); other compilers get the baseline. The caller aligns the
 * workspace to 64 bytes, so every row of lanes is whole cache lines: with NumPy's 16-byte
 * alignment a third of the AVX-512 loads split a line (τ of a Panda sample 0.17 → 0.12 µs, the
 * jet 0.53 → 0.40 µs, measured in one process). 32 lanes beat 16 by ≈ 15 % for τ (the model's
 * constants, e.g. a revolute joint's translation, are loaded once per 32 samples).
 */
#ifndef MBS_SOA_H
#define MBS_SOA_H

#include <math.h>

#define MBS_L 32

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MBS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MBS_CLONES
#endif
#define MBS_R __restrict__
#if defined(__GNUC__)
#define MBS_UNUSED __attribute__((unused))
#else
#define MBS_UNUSED
#endif
#if defined(__GNUC__)
#define MBS_INLINE static inline __attribute__((always_inline))
#else
#define MBS_INLINE static inline
#endif

/* ---- sine and cosine ------------------------------------------------------------------- */
#define MBS_SC_BIG 1e5

MBS_INLINE void mbs_sincos_poly(double x, double* s, double* c) {
    const double MAGIC = 6755399441055744.0; /* 1.5 · 2^52: (y + MAGIC) − MAGIC rounds y */
    double k = (x * 0.63661977236758134308 + MAGIC) - MAGIC;        /* round(x · 2/π) */
    double r = ((x - k * 1.57079625129699707031E0) - k * 7.54978941586159635335E-8)
               - k * 5.39030285815811905290E-15;                      /* |r| ≤ π/4 */
    double z = r * r;
    double ps = ((((((1.58962301576546568060E-10 * z - 2.50507477628578072866E-8) * z
                     + 2.75573136213857245213E-6) * z - 1.98412698295895385996E-4) * z
                   + 8.33333333332211858878E-3) * z - 1.66666666666666307295E-1));
    double pc = ((((((-1.13585365213876817300E-11 * z + 2.08757008419747316778E-9) * z
                     - 2.75573141792967388112E-7) * z + 2.48015872888517045348E-5) * z
                   - 1.38888888888730564116E-3) * z + 4.16666666666665929218E-2));
    double sr = r + r * (z * ps);
    double cr = (1.0 - 0.5 * z) + z * z * pc;
    double k4 = (k * 0.25 + MAGIC) - MAGIC;
    double qd = k - 4.0 * k4;                                          /* −2, −1, 0, 1, 2 */
    int odd = (qd == 1.0) | (qd == -1.0);
    double ss = odd ? cr : sr, cc = odd ? sr : cr;
    *s = (qd == -1.0) | (qd == 2.0) | (qd == -2.0) ? -ss : ss;
    *c = (qd == 1.0) | (qd == 2.0) | (qd == -2.0) ? -cc : cc;
}

static inline void mbs_sincos(double x, double* s, double* c) {
    if (fabs(x) <= MBS_SC_BIG) {
        mbs_sincos_poly(x, s, c);
    } else {
        *s = sin(x);
        *c = cos(x);
    }
}

/* ---- the model as the block kernels see it ------------------------------------------------ */
typedef struct {
    int nb;
    const int* parent;
    const int* jtype;       /* 0 revolute, 1 prismatic (fixed base only here) */
    const double* axis;
    const double* BR;
    const double* Bp;
    const double* BE1;
    const double* BE2;
    const double* BRe;
    const double* mass;
    const double* h;
    const double* Th;
    double g[3];
} mbs_soa_model;

/* workspace doubles per block: T (12), V, A, W (6 each), per body; scratch */
static inline long mbs_soa_work_size(int nb, int rows) {
    return (long) MBS_L * (12L * nb + 6L * nb * (2L * rows + 1) + 6L * 8 + 16L * rows * rows);
}

#define LOOP for (int l = 0; l < MBS_L; ++l)
#define R6(p, c) ((p) + (c) * MBS_L)
/* coordinate k of the translation of a joint pose at lane l: the rows 9–11 of T (cst = 0), or,
 * for a revolute joint, the model's B_p, the same in every lane (cst = 1; the call sites pass a
 * literal, so after inlining the loads are broadcasts of three constants, the values the same) */
#define SOA_P(T, P, cst, k, l) ((cst) ? (P)[k] : R6(T, 9 + (k))[l])

/* T = C_{λ(i),i}(q) (joint_pose) for every lane */
MBS_INLINE void soa_joint_pose(const mbs_soa_model* m, int i, const double* MBS_R q, double* MBS_R T) {
    const double* B = m->BR + 9 * i;
    const double* Bp = m->Bp + 3 * i;
    if (m->jtype[i] == 0) {
        const double* E1 = m->BE1 + 9 * i;
        const double* E2 = m->BE2 + 9 * i;
        double s[MBS_L], t[MBS_L];
        int big = 0;
        LOOP {
            double sl, cl;
            mbs_sincos_poly(q[l], &sl, &cl);
            s[l] = sl;
            t[l] = 1.0 - cl;
            big |= !(fabs(q[l]) <= MBS_SC_BIG);
        }
        if (big) {
            LOOP {
                if (!(fabs(q[l]) <= MBS_SC_BIG)) {
                    s[l] = sin(q[l]);
                    t[l] = 1.0 - cos(q[l]);
                }
            }
        }
        /* B + s E1 + t E2 with the model's zero coefficients left out (x + 0 = x: the same
         * values as the single calls' full sums) */
        for (int a = 0; a < 9; ++a) {
            const double b = B[a], e1 = E1[a], e2 = E2[a];
            if (e1 == 0.0 && e2 == 0.0) LOOP R6(T, a)[l] = b;
            else if (e2 == 0.0) LOOP R6(T, a)[l] = b + s[l] * e1;
            else if (e1 == 0.0) LOOP R6(T, a)[l] = b + t[l] * e2;
            else LOOP R6(T, a)[l] = b + s[l] * e1 + t[l] * e2;
        }
        for (int a = 0; a < 3; ++a) LOOP R6(T, 9 + a)[l] = Bp[a];
    } else {
        const double* Be = m->BRe + 3 * i;
        for (int a = 0; a < 9; ++a) LOOP R6(T, a)[l] = B[a];
        for (int a = 0; a < 3; ++a) LOOP R6(T, 9 + a)[l] = Bp[a] + Be[a] * q[l];
    }
}

/* lane l of d = Ad_{C_{i,λ}} s (to_child): the one formula soa_to_child and soa_to_child2 run.
 * A macro, not an inline function: as a function called twice in one lane loop GCC stopped
 * vectorising soa_to_child2 (τ batch 0.12 → 0.24 µs a Panda sample). */
#define SOA_TO_CHILD_LANE(T, P, cst, s, d, l)                                                   \
    do {                                                                                        \
        double w0 = R6(s, 0)[l], w1 = R6(s, 1)[l], w2 = R6(s, 2)[l];                          \
        double p0 = SOA_P(T, P, cst, 0, l), p1 = SOA_P(T, P, cst, 1, l);                      \
        double p2 = SOA_P(T, P, cst, 2, l);                                                     \
        double v0 = R6(s, 3)[l] + w1 * p2 - w2 * p1;                                           \
        double v1 = R6(s, 4)[l] + w2 * p0 - w0 * p2;                                           \
        double v2 = R6(s, 5)[l] + w0 * p1 - w1 * p0;                                           \
        double T0 = R6(T, 0)[l], T1 = R6(T, 1)[l], T2 = R6(T, 2)[l], T3 = R6(T, 3)[l];        \
        double T4 = R6(T, 4)[l], T5 = R6(T, 5)[l], T6 = R6(T, 6)[l], T7 = R6(T, 7)[l];        \
        double T8 = R6(T, 8)[l];                                                                \
        R6(d, 0)[l] = T0 * w0 + T3 * w1 + T6 * w2;                                             \
        R6(d, 1)[l] = T1 * w0 + T4 * w1 + T7 * w2;                                             \
        R6(d, 2)[l] = T2 * w0 + T5 * w1 + T8 * w2;                                             \
        R6(d, 3)[l] = T0 * v0 + T3 * v1 + T6 * v2;                                             \
        R6(d, 4)[l] = T1 * v0 + T4 * v1 + T7 * v2;                                             \
        R6(d, 5)[l] = T2 * v0 + T5 * v1 + T8 * v2;                                             \
    } while (0)

/* d = Ad_{C_{i,λ}} s (to_child) */
MBS_INLINE void soa_to_child(const double* MBS_R T, const double* MBS_R P, int cst,
                             const double* MBS_R s, double* MBS_R d) {
    LOOP SOA_TO_CHILD_LANE(T, P, cst, s, d, l);
}

/* d = Ad_{C_{i,λ}} s and e = Ad_{C_{i,λ}} t in one pass (T read once per lane): two to_child */
MBS_INLINE void soa_to_child2(const double* MBS_R T, const double* MBS_R P, int cst,
                              const double* MBS_R s, double* MBS_R d,
                              const double* MBS_R t, double* MBS_R e) {
    LOOP {
        SOA_TO_CHILD_LANE(T, P, cst, s, d, l);
        SOA_TO_CHILD_LANE(T, P, cst, t, e, l);
    }
}

/* lane l of d = M_i s (inertia_times) with the body's mass ms, first moment h0..h2, rotational
 * inertia Ti: the one formula soa_inertia_times and soa_inertia_times2 run (a macro for the
 * reason given at SOA_TO_CHILD_LANE) */
#define SOA_INERTIA_LANE(s, d, l)                                                               \
    do {                                                                                        \
        double w0 = R6(s, 0)[l], w1 = R6(s, 1)[l], w2 = R6(s, 2)[l];                          \
        double v0 = R6(s, 3)[l], v1 = R6(s, 4)[l], v2 = R6(s, 5)[l];                          \
        R6(d, 0)[l] = Ti[0] * w0 + Ti[1] * w1 + Ti[2] * w2 + (h1 * v2 - h2 * v1);             \
        R6(d, 1)[l] = Ti[3] * w0 + Ti[4] * w1 + Ti[5] * w2 + (h2 * v0 - h0 * v2);             \
        R6(d, 2)[l] = Ti[6] * w0 + Ti[7] * w1 + Ti[8] * w2 + (h0 * v1 - h1 * v0);             \
        R6(d, 3)[l] = ms * v0 - (h1 * w2 - h2 * w1);                                           \
        R6(d, 4)[l] = ms * v1 - (h2 * w0 - h0 * w2);                                           \
        R6(d, 5)[l] = ms * v2 - (h0 * w1 - h1 * w0);                                           \
    } while (0)

/* d = M_i s and e = M_i t in one pass: two inertia_times */
MBS_INLINE void soa_inertia_times2(const mbs_soa_model* m, int i, const double* MBS_R s,
                                   double* MBS_R d, const double* MBS_R t, double* MBS_R e) {
    const double ms = m->mass[i];
    const double* Ti = m->Th + 9 * i;
    const double h0 = m->h[3 * i], h1 = m->h[3 * i + 1], h2 = m->h[3 * i + 2];
    LOOP {
        SOA_INERTIA_LANE(s, d, l);
        SOA_INERTIA_LANE(t, e, l);
    }
}

/* d += Ad_{C_{i,λ}}ᵀ s (add_to_parent) */
MBS_INLINE void soa_add_to_parent(const double* MBS_R T, const double* MBS_R P, int cst,
                                  const double* MBS_R s, double* MBS_R d) {
    LOOP {
        double s0 = R6(s, 0)[l], s1 = R6(s, 1)[l], s2 = R6(s, 2)[l];
        double s3 = R6(s, 3)[l], s4 = R6(s, 4)[l], s5 = R6(s, 5)[l];
        double T0 = R6(T, 0)[l], T1 = R6(T, 1)[l], T2 = R6(T, 2)[l], T3 = R6(T, 3)[l];
        double T4 = R6(T, 4)[l], T5 = R6(T, 5)[l], T6 = R6(T, 6)[l], T7 = R6(T, 7)[l];
        double T8 = R6(T, 8)[l];
        double f0 = T0 * s3 + T1 * s4 + T2 * s5;
        double f1 = T3 * s3 + T4 * s4 + T5 * s5;
        double f2 = T6 * s3 + T7 * s4 + T8 * s5;
        double m0 = T0 * s0 + T1 * s1 + T2 * s2;
        double m1 = T3 * s0 + T4 * s1 + T5 * s2;
        double m2 = T6 * s0 + T7 * s1 + T8 * s2;
        double p0 = SOA_P(T, P, cst, 0, l), p1 = SOA_P(T, P, cst, 1, l), p2 = SOA_P(T, P, cst, 2, l);
        R6(d, 0)[l] += m0 + p1 * f2 - p2 * f1;
        R6(d, 1)[l] += m1 + p2 * f0 - p0 * f2;
        R6(d, 2)[l] += m2 + p0 * f1 - p1 * f0;
        R6(d, 3)[l] += f0;
        R6(d, 4)[l] += f1;
        R6(d, 5)[l] += f2;
    }
}

/* d = M_i s (inertia_times) */
MBS_INLINE void soa_inertia_times(const mbs_soa_model* m, int i, const double* MBS_R s, double* MBS_R d) {
    const double ms = m->mass[i];
    const double* Ti = m->Th + 9 * i;
    const double h0 = m->h[3 * i], h1 = m->h[3 * i + 1], h2 = m->h[3 * i + 2];
    LOOP SOA_INERTIA_LANE(s, d, l);
}

/* d = ad_{X_i} s (twists) or ad_{X_i}ᵀ s (wrenches) (ad_X); d may not alias s */
/* the coordinate k of an axis along one coordinate axis (e = c u_k), or −1 */
MBS_INLINE int soa_axis_k(const double* e) {
    if (e[0] == 0.0 && e[1] == 0.0) return 2;
    if (e[1] == 0.0 && e[2] == 0.0) return 0;
    if (e[0] == 0.0 && e[2] == 0.0) return 1;
    return -1;
}

/* y = c u_k × x (rows r0..r0+2 of d from rows x0..x0+2 of s): the generic e × x with its zero
 * products left out, the same values (0·x ± y = ±y) */
MBS_INLINE void soa_cross_k(int k, double c, const double* MBS_R s, int x0, double* MBS_R d,
                            int r0) {
    const double* a0 = R6(s, x0);
    const double* a1 = R6(s, x0 + 1);
    const double* a2 = R6(s, x0 + 2);
    double* d0 = R6(d, r0);
    double* d1 = R6(d, r0 + 1);
    double* d2 = R6(d, r0 + 2);
    if (k == 2) LOOP { d0[l] = -(c * a1[l]); d1[l] = c * a0[l]; d2[l] = 0.0; }
    else if (k == 0) LOOP { d0[l] = 0.0; d1[l] = -(c * a2[l]); d2[l] = c * a1[l]; }
    else LOOP { d0[l] = c * a2[l]; d1[l] = 0.0; d2[l] = -(c * a0[l]); }
}

/* d = ad_{X_i} s (twists) or ad_{X_i}ᵀ s (wrenches) (ad_X); d may not alias s */
MBS_INLINE void soa_ad_X(const mbs_soa_model* m, int i, const double* MBS_R s, double* MBS_R d,
                         int transpose) {
    const double* e = m->axis + 3 * i;
    const double ex = e[0], ey = e[1], ez = e[2];
    const int k = soa_axis_k(e);
    if (k >= 0) {  /* sg · (e × x) = (sg e_k) u_k × x: sg = ±1 changes no rounding */
        const double c = e[k];
        if (m->jtype[i] == 0) {
            soa_cross_k(k, transpose ? -c : c, s, 0, d, 0);
            soa_cross_k(k, transpose ? -c : c, s, 3, d, 3);
        } else if (!transpose) {
            soa_cross_k(k, c, s, 0, d, 3);
            LOOP { R6(d, 0)[l] = 0.0; R6(d, 1)[l] = 0.0; R6(d, 2)[l] = 0.0; }
        } else {
            soa_cross_k(k, -c, s, 3, d, 0);
            LOOP { R6(d, 3)[l] = 0.0; R6(d, 4)[l] = 0.0; R6(d, 5)[l] = 0.0; }
        }
        return;
    }
    if (m->jtype[i] == 0) {
        const double sg = transpose ? -1.0 : 1.0;
        LOOP {
            double a0 = R6(s, 0)[l], a1 = R6(s, 1)[l], a2 = R6(s, 2)[l];
            double b0 = R6(s, 3)[l], b1 = R6(s, 4)[l], b2 = R6(s, 5)[l];
            R6(d, 0)[l] = sg * (ey * a2 - ez * a1);
            R6(d, 1)[l] = sg * (ez * a0 - ex * a2);
            R6(d, 2)[l] = sg * (ex * a1 - ey * a0);
            R6(d, 3)[l] = sg * (ey * b2 - ez * b1);
            R6(d, 4)[l] = sg * (ez * b0 - ex * b2);
            R6(d, 5)[l] = sg * (ex * b1 - ey * b0);
        }
    } else if (!transpose) {
        LOOP {
            double a0 = R6(s, 0)[l], a1 = R6(s, 1)[l], a2 = R6(s, 2)[l];
            R6(d, 3)[l] = ey * a2 - ez * a1;
            R6(d, 4)[l] = ez * a0 - ex * a2;
            R6(d, 5)[l] = ex * a1 - ey * a0;
            R6(d, 0)[l] = 0.0;
            R6(d, 1)[l] = 0.0;
            R6(d, 2)[l] = 0.0;
        }
    } else {
        LOOP {
            double b0 = R6(s, 3)[l], b1 = R6(s, 4)[l], b2 = R6(s, 5)[l];
            R6(d, 0)[l] = -(ey * b2 - ez * b1);
            R6(d, 1)[l] = -(ez * b0 - ex * b2);
            R6(d, 2)[l] = -(ex * b1 - ey * b0);
            R6(d, 3)[l] = 0.0;
            R6(d, 4)[l] = 0.0;
            R6(d, 5)[l] = 0.0;
        }
    }
}

/* d −= b ad_Vᵀ s (add_adT) */
MBS_INLINE void soa_add_adT(const double* MBS_R V, const double* MBS_R s, double* MBS_R d, double b) {
    LOOP {
        double w0 = R6(V, 0)[l], w1 = R6(V, 1)[l], w2 = R6(V, 2)[l];
        double l0 = R6(V, 3)[l], l1 = R6(V, 4)[l], l2 = R6(V, 5)[l];
        double u0 = R6(s, 0)[l], u1 = R6(s, 1)[l], u2 = R6(s, 2)[l];
        double f0 = R6(s, 3)[l], f1 = R6(s, 4)[l], f2 = R6(s, 5)[l];
        R6(d, 0)[l] += b * (w1 * u2 - w2 * u1 + l1 * f2 - l2 * f1);
        R6(d, 1)[l] += b * (w2 * u0 - w0 * u2 + l2 * f0 - l0 * f2);
        R6(d, 2)[l] += b * (w0 * u1 - w1 * u0 + l0 * f1 - l1 * f0);
        R6(d, 3)[l] += b * (w1 * f2 - w2 * f1);
        R6(d, 4)[l] += b * (w2 * f0 - w0 * f2);
        R6(d, 5)[l] += b * (w0 * f1 - w1 * f0);
    }
}

/* v += s X_i (add_X), s per lane */
MBS_INLINE void soa_add_X(const mbs_soa_model* m, int i, const double* MBS_R s, double* MBS_R v) {
    const double* e = m->axis + 3 * i;
    const int o = m->jtype[i] == 0 ? 0 : 3;
    for (int a = 0; a < 3; ++a)
        if (e[a] != 0.0) LOOP R6(v, o + a)[l] += s[l] * e[a];   /* v + s·0 = v */
}

/* d += c s, c per lane (axpy6) */
MBS_INLINE void soa_axpy6(const double* MBS_R c, const double* MBS_R s, double* MBS_R d) {
    for (int a = 0; a < 6; ++a) LOOP R6(d, a)[l] += c[l] * R6(s, a)[l];
}

/* d += c s, one c (axpy6) */
MBS_INLINE void soa_axpy6c(double c, const double* MBS_R s, double* MBS_R d) {
    for (int a = 0; a < 6; ++a) LOOP R6(d, a)[l] += c * R6(s, a)[l];
}

MBS_INLINE void soa_copy6(const double* MBS_R s, double* MBS_R d) {
    for (int a = 0; a < 6 * MBS_L; ++a) d[a] = s[a];
}

MBS_INLINE void soa_zero6(double* MBS_R d) {
    for (int a = 0; a < 6 * MBS_L; ++a) d[a] = 0.0;
}

/* d = (0, −Rᵀ g) (base_gravity) */
MBS_INLINE void soa_base_gravity(const mbs_soa_model* m, const double* MBS_R T, double* MBS_R d) {
    const double g0 = m->g[0], g1 = m->g[1], g2 = m->g[2];
    LOOP {
        R6(d, 0)[l] = 0.0;
        R6(d, 1)[l] = 0.0;
        R6(d, 2)[l] = 0.0;
        R6(d, 3)[l] = -(R6(T, 0)[l] * g0 + R6(T, 3)[l] * g1 + R6(T, 6)[l] * g2);
        R6(d, 4)[l] = -(R6(T, 1)[l] * g0 + R6(T, 4)[l] * g1 + R6(T, 7)[l] * g2);
        R6(d, 5)[l] = -(R6(T, 2)[l] * g0 + R6(T, 5)[l] * g1 + R6(T, 8)[l] * g2);
    }
}

/* out[l] = X_iᵀ w (X_dot) */
MBS_INLINE void soa_X_dot(const mbs_soa_model* m, int i, const double* MBS_R w, double* MBS_R out) {
    const double* e = m->axis + 3 * i;
    const int o = m->jtype[i] == 0 ? 0 : 3;
    const int k = soa_axis_k(e);
    if (k >= 0) {  /* 0·w + 0·w + c·w = c·w */
        const double c = e[k];
        LOOP out[l] = c * R6(w, o + k)[l];
    } else {
        LOOP out[l] = e[0] * R6(w, o)[l] + e[1] * R6(w, o + 1)[l] + e[2] * R6(w, o + 2)[l];
    }
}

/* ---- τ = ID(q, q̇, q̈) of MBS_L samples: rnea0 of _rnea.pyx, lane by lane ----------------- */
/* qj: (3, nb, L) q, q̇, q̈ per body and lane; out: (nb, L) */
MBS_CLONES
static void mbs_soa_rnea0(const mbs_soa_model* m, double* work, const double* qj, double* out) {
    const int nb = m->nb;
    const int L = MBS_L;
    double* T = work;
    double* V = T + 12 * nb * L;
    double* A = V + 6 * nb * L;
    double* W = A + 6 * nb * L;
    double* s = W + 6 * nb * L;
    double nq[MBS_L];
    for (int i = 0; i < nb; ++i) {
        const int par = m->parent[i];
        double* Ti = T + 12 * L * i;
        double* Vi = V + 6 * L * i;
        double* Ai = A + 6 * L * i;
        const double* qd = qj + (nb + i) * L;
        soa_joint_pose(m, i, qj + i * L, Ti);
        if (par >= 0) {
            if (m->jtype[i] == 0)
                soa_to_child2(Ti, m->Bp + 3 * i, 1, V + 6 * L * par, Vi, A + 6 * L * par, Ai);
            else
                soa_to_child2(Ti, 0, 0, V + 6 * L * par, Vi, A + 6 * L * par, Ai);
            soa_ad_X(m, i, Vi, s, 0);
            LOOP nq[l] = -qd[l];
            soa_axpy6(nq, s, Ai);
        } else {
            soa_zero6(Vi);
            soa_base_gravity(m, Ti, Ai);
        }
        soa_add_X(m, i, qd, Vi);
        soa_add_X(m, i, qj + (2 * nb + i) * L, Ai);
    }
    for (int a = 0; a < 6 * nb * L; ++a) W[a] = 0.0;
    for (int i = nb - 1; i >= 0; --i) {
        double* Vi = V + 6 * L * i;
        double* Wi = W + 6 * L * i;
        const int par = m->parent[i];
        soa_inertia_times2(m, i, A + 6 * L * i, s, Vi, s + 6 * L);
        soa_axpy6c(1.0, s, Wi);
        soa_add_adT(Vi, s + 6 * L, Wi, 1.0);
        soa_X_dot(m, i, Wi, out + i * L);
        if (par >= 0) {
            if (m->jtype[i] == 0) soa_add_to_parent(T + 12 * L * i, m->Bp + 3 * i, 1, Wi, W + 6 * L * par);
            else soa_add_to_parent(T + 12 * L * i, 0, 0, Wi, W + 6 * L * par);
        }
    }
}

/* N samples of a fixed-base robot: q, v, a (N, nb) row-major → out (N, nb) */
MBS_CLONES MBS_UNUSED
static void mbs_soa_rnea_batch(const mbs_soa_model* m, double* work, long N, const double* q,
                               const double* v, const double* a, double* out) {
    const int nb = m->nb, L = MBS_L;
    double* qj = work + mbs_soa_work_size(nb, 1);
    double* o = qj + 3 * nb * L;
    for (long s0 = 0; s0 < N; s0 += L) {
        for (int l = 0; l < L; ++l) {
            const long s = s0 + l < N ? s0 + l : N - 1;   /* the last block repeats a sample */
            for (int i = 0; i < nb; ++i) {
                qj[i * L + l] = q[s * nb + i];
                qj[(nb + i) * L + l] = v[s * nb + i];
                qj[(2 * nb + i) * L + l] = a[s * nb + i];
            }
        }
        mbs_soa_rnea0(m, work, qj, o);
        for (int l = 0; l < L && s0 + l < N; ++l)
            for (int i = 0; i < nb; ++i) out[(s0 + l) * nb + i] = o[i * L + l];
    }
}

/* doubles mbs_soa_rnea_batch needs in ``work`` */
static inline long mbs_soa_rnea_batch_size(int nb) {
    return mbs_soa_work_size(nb, 1) + 4L * nb * MBS_L;
}

/* ---- τ, τ′, τ″ of MBS_L samples: rnea_jet of _rnea.pyx with K = 2 (fixed base, no applied
 * wrenches), its Bell sums written out as phi_small does ------------------------------------ */
#define AU(l, j) (Au + 6 * L * (4 * (l) + (j)))
/* qj: (5, nb, L) q, q′, q″, q‴, q⁗; out: (3, nb, L) */
MBS_CLONES
static void mbs_soa_jet2(const mbs_soa_model* m, double* work, const double* qj, double* out) {
    const int nb = m->nb;
    const int L = MBS_L;
    double* T = work;
    double* V = T + 12 * nb * L;         /* (4, nb, 6, L) */
    double* W = V + 4 * 6 * nb * L;      /* (3, nb, 6, L) */
    double* Au = W + 3 * 6 * nb * L;     /* (4, 4, 6, L) */
    double* MV = Au + 16 * 6 * L;        /* (4, 6, L) */
    double* S = MV + 4 * 6 * L;          /* (6, L) */
    double c1[MBS_L], c2[MBS_L], c3[MBS_L], c4[MBS_L], c5[MBS_L], c6[MBS_L];
    /* forward pass */
    for (int i = 0; i < nb; ++i) {
        const int par = m->parent[i];
        double* Ti = T + 12 * L * i;
        const double* q1 = qj + (nb + i) * L;
        const double* q2 = qj + (2 * nb + i) * L;
        const double* q3 = qj + (3 * nb + i) * L;
        soa_joint_pose(m, i, qj + i * L, Ti);
        for (int l = 0; l < 4; ++l) {
            if (par >= 0 && m->jtype[i] == 0)
                soa_to_child(Ti, m->Bp + 3 * i, 1, V + 6 * L * (l * nb + par), AU(l, 0));
            else if (par >= 0) soa_to_child(Ti, 0, 0, V + 6 * L * (l * nb + par), AU(l, 0));
            else if (l == 1) soa_base_gravity(m, Ti, AU(1, 0));
            else soa_zero6(AU(l, 0));
        }
        for (int l = 0; l < 4; ++l)
            for (int j = 1; j < 4 - l; ++j) soa_ad_X(m, i, AU(l, j - 1), AU(l, j), 0);
        for (int k = 0; k < 4; ++k) {
            double* Vk = V + 6 * L * (k * nb + i);
            soa_copy6(AU(k, 0), Vk);
            if (k == 1) {
                LOOP c1[l] = -q1[l];
                soa_axpy6(c1, AU(0, 1), Vk);
            } else if (k == 2) {
                LOOP {
                    c1[l] = -2.0 * q1[l];
                    c2[l] = -q2[l];
                    c3[l] = q1[l] * q1[l];
                }
                soa_axpy6(c1, AU(1, 1), Vk);
                soa_axpy6(c2, AU(0, 1), Vk);
                soa_axpy6(c3, AU(0, 2), Vk);
            } else if (k == 3) {
                LOOP {
                    c1[l] = -3.0 * q1[l];
                    c2[l] = -3.0 * q2[l];
                    c3[l] = 3.0 * q1[l] * q1[l];
                    c4[l] = -q3[l];
                    c5[l] = 3.0 * q1[l] * q2[l];
                    c6[l] = -q1[l] * q1[l] * q1[l];
                }
                soa_axpy6(c1, AU(2, 1), Vk);
                soa_axpy6(c2, AU(1, 1), Vk);
                soa_axpy6(c3, AU(1, 2), Vk);
                soa_axpy6(c4, AU(0, 1), Vk);
                soa_axpy6(c5, AU(0, 2), Vk);
                soa_axpy6(c6, AU(0, 3), Vk);
            }
            soa_add_X(m, i, qj + ((k + 1) * nb + i) * L, Vk);
        }
    }
    /* backward pass */
    for (int a = 0; a < 3 * 6 * nb * L; ++a) W[a] = 0.0;
    for (int i = nb - 1; i >= 0; --i) {
        const int par = m->parent[i];
        const double* q1 = qj + (nb + i) * L;
        const double* q2 = qj + (2 * nb + i) * L;
        for (int k = 0; k < 4; ++k) soa_inertia_times(m, i, V + 6 * L * (k * nb + i), MV + 6 * L * k);
        for (int k = 0; k < 3; ++k) {
            double* Wk = W + 6 * L * (k * nb + i);
            soa_axpy6c(1.0, MV + 6 * L * (k + 1), Wk);
            for (int mm = 0; mm <= k; ++mm)
                soa_add_adT(V + 6 * L * (mm * nb + i), MV + 6 * L * (k - mm), Wk,
                            (k == 2 && mm == 1) ? 2.0 : 1.0);
            soa_X_dot(m, i, Wk, out + (k * nb + i) * L);
        }
        if (par < 0) continue;
        for (int l = 0; l < 3; ++l) {
            soa_copy6(W + 6 * L * (l * nb + i), AU(l, 0));
            for (int j = 1; j < 3 - l; ++j) soa_ad_X(m, i, AU(l, j - 1), AU(l, j), 1);
        }
        for (int k = 0; k < 3; ++k) {
            soa_copy6(AU(k, 0), S);
            if (k == 1) {
                LOOP c1[l] = -q1[l];
                soa_axpy6(c1, AU(0, 1), S);
            } else if (k == 2) {
                LOOP {
                    c1[l] = -2.0 * q1[l];
                    c2[l] = -q2[l];
                    c3[l] = q1[l] * q1[l];
                }
                soa_axpy6(c1, AU(1, 1), S);
                soa_axpy6(c2, AU(0, 1), S);
                soa_axpy6(c3, AU(0, 2), S);
            }
            if (m->jtype[i] == 0)
                soa_add_to_parent(T + 12 * L * i, m->Bp + 3 * i, 1, S, W + 6 * L * (k * nb + par));
            else soa_add_to_parent(T + 12 * L * i, 0, 0, S, W + 6 * L * (k * nb + par));
        }
    }
}
#undef AU

/* doubles mbs_soa_jet2_batch needs in ``work`` */
static inline long mbs_soa_jet2_batch_size(int nb) {
    return (long) MBS_L * (12L * nb + 42L * nb + 22L * 6 + 8L * nb);
}

/* N samples of a fixed-base robot: q rows at q + s·sq, the rows q′, q″, q‴, q⁗ at v + s·sv
 * (each nb long, contiguous) → out (N, 3, nb) rows τ, τ′, τ″ */
MBS_CLONES MBS_UNUSED
static void mbs_soa_jet2_batch(const mbs_soa_model* m, double* work, long N, const double* q,
                               long sq, const double* v, long sv, double* out) {
    const int nb = m->nb, L = MBS_L;
    double* qj = work + (long) L * (12L * nb + 42L * nb + 22L * 6);
    double* o = qj + 5 * nb * L;
    for (long s0 = 0; s0 < N; s0 += L) {
        for (int l = 0; l < L; ++l) {
            const long s = s0 + l < N ? s0 + l : N - 1;   /* the last block repeats a sample */
            for (int i = 0; i < nb; ++i) qj[i * L + l] = q[s * sq + i];
            for (int r = 0; r < 4; ++r)
                for (int i = 0; i < nb; ++i) qj[((r + 1) * nb + i) * L + l] = v[s * sv + r * nb + i];
        }
        mbs_soa_jet2(m, work, qj, o);
        for (int l = 0; l < L && s0 + l < N; ++l)
            for (int k = 0; k < 3; ++k)
                for (int i = 0; i < nb; ++i) out[(s0 + l) * 3 * nb + k * nb + i] = o[(k * nb + i) * L + l];
    }
}

#endif
