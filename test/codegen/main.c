/* A plain C99 program linking generated code (issue 21, item 2), built and run by
 * test/test_codegen_c.py with gcc -std=c99 -pedantic -Wall -Wextra -Werror.
 *
 * The test writes expected.h: NCASES states (Q, V, A) with Pinocchio's TAU, M, G, the forward
 * dynamics FD of (Q, V, TAU_FD), the LOCAL Jacobian JAC of frame FRAME_JACOBIAN, and the jets
 * JET of (Q, VS). This program calls the generated functions the way a real-time loop does (a
 * workspace on the stack, fixed-size arrays, no allocation), and exits 0 only if every result
 * agrees with the expected values at TOL relative. */
#include <math.h>
#include <stdio.h>

#include "robot.h"
#include "expected.h"

#define NQ robot_NQ
#define NV robot_NV

static int check(const char *what, int k, const double *got, const double *want, int n)
{
  double err = 0.0, scale = 0.0;
  int i;
  for (i = 0; i < n; i++) {
    double d = fabs(got[i] - want[i]);
    if (!(d <= err)) err = d; /* NaN propagates */
    if (fabs(want[i]) > scale) scale = fabs(want[i]);
  }
  if (scale < 1.0) scale = 1.0;
  if (!(err <= TOL * scale)) {
    printf("FAIL %s case %d: max error %.3e (scale %.3e)\n", what, k, err, scale);
    return 1;
  }
  return 0;
}

int main(void)
{
  robot_workspace w1, w2; /* two workspaces: the functions are re-entrant */
  double tau[NV], g[NV], a[NV], M[NV * NV], J[6 * NV], jet[3 * NV];
  int k, fails = 0;
  for (k = 0; k < NCASES; k++) {
    robot_inverse_dynamics(Q[k], V[k], A[k], tau, &w1);
    fails += check("inverse_dynamics", k, tau, TAU[k], NV);
    robot_mass_matrix(Q[k], M, &w2);
    fails += check("mass_matrix", k, M, MM[k], NV * NV);
    robot_gravity_torques(Q[k], g, &w1);
    fails += check("gravity_torques", k, g, G[k], NV);
    robot_forward_dynamics(Q[k], V[k], TAU_FD[k], a, &w2);
    fails += check("forward_dynamics", k, a, FD[k], NV);
    FRAME_JACOBIAN(Q[k], J, &w1);
    fails += check("frame_jacobian", k, J, JAC[k], 6 * NV);
    robot_torque_derivatives(Q[k], VS[k], jet, &w2);
    fails += check("torque_derivatives", k, jet, JET[k], 3 * NV);
  }
  printf("%s: %d cases, %d failures, model %.12s\n", fails ? "FAIL" : "OK", NCASES, fails,
         robot_model_hash);
  return fails != 0;
}
