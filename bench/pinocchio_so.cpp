// Pinocchio's own C++ second-order RNEA derivatives, timed against its first-order call in one
// process, and dumped for a cross-check (issue 29). Built and driven by bench/pinocchio_so.py
// (g++ -O3 -march=native against the headers and libraries of the pip-installed `pin` wheel);
// never fetched sources.
//
//   pinocchio_so MODEL.txt STATE.txt dump            -> the four tensors, see below
//   pinocchio_so MODEL.txt STATE.txt bench N R       -> R interleaved repeats of N calls each
//
// MODEL.txt: a pinocchio::Model saved by Python's `model.saveToText` (same Pinocchio build, so
// the same model: locked joints, floating base, chains built in Python all carry over).
// STATE.txt: whitespace-separated q (nq), v (nv), a (nv).
// dump: "nv" then, per tensor (d2tau_dqdq, d2tau_dvdv, dtau_dqdv, dtau_dadq), nv^3 numbers in
// the Eigen::Tensor's own (column-major) storage order, T(i, j, k) at i + nv j + nv^2 k.
// bench: per repeat "so_us fo_us" (CPU microseconds per call; the second-order call includes
// zeroing its four tensors, which its documentation requires before every call).
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "pinocchio/multibody.hpp"
#include "pinocchio/serialization.hpp"
#include "pinocchio/algorithm/rnea-derivatives.hpp"
#include "pinocchio/algorithm/rnea-second-order-derivatives.hpp"

typedef pinocchio::Data::Tensor3x Tensor3x;

static double cpu_seconds()
{
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char ** argv)
{
  if (argc < 4)
  {
    std::fprintf(stderr, "usage: %s MODEL.txt STATE.txt dump|bench N R\n", argv[0]);
    return 2;
  }
  pinocchio::Model model;
  model.loadFromText(argv[1]);
  pinocchio::Data data(model);
  const int nq = model.nq, nv = model.nv;
  Eigen::VectorXd q(nq), v(nv), a(nv);
  std::ifstream st(argv[2]);
  for (int i = 0; i < nq; ++i)
    st >> q[i];
  for (int i = 0; i < nv; ++i)
    st >> v[i];
  for (int i = 0; i < nv; ++i)
    st >> a[i];
  if (!st)
  {
    std::fprintf(stderr, "state file %s: expected %d + 2x%d numbers\n", argv[2], nq, nv);
    return 2;
  }
  Tensor3x dqq(nv, nv, nv), dvv(nv, nv, nv), dqv(nv, nv, nv), daq(nv, nv, nv);
  auto second = [&]() {
    dqq.setZero();
    dvv.setZero();
    dqv.setZero();
    daq.setZero();
    pinocchio::ComputeRNEASecondOrderDerivatives(model, data, q, v, a, dqq, dvv, dqv, daq);
  };
  auto first = [&]() { pinocchio::computeRNEADerivatives(model, data, q, v, a); };
  const std::string mode(argv[3]);
  if (mode == "dump")
  {
    second();
    std::printf("%d\n", nv);
    const Tensor3x * ts[4] = {&dqq, &dvv, &dqv, &daq};
    const long n3 = (long)nv * nv * nv;
    for (int t = 0; t < 4; ++t)
      for (long e = 0; e < n3; ++e)
        std::printf("%.17g\n", ts[t]->data()[e]);
    return 0;
  }
  if (mode != "bench" || argc < 6)
  {
    std::fprintf(stderr, "unknown mode %s\n", argv[3]);
    return 2;
  }
  const long number = std::atol(argv[4]);
  const int repeats = std::atoi(argv[5]);
  second();
  first();
  for (int r = 0; r < repeats; ++r)
  {
    double ts = 0.0, tf = 0.0;
    for (int side = 0; side < 2; ++side)
    {
      const bool so_now = (side == 0) == (r % 2 == 0); // alternate which call goes first
      const double t0 = cpu_seconds();
      if (so_now)
        for (long n = 0; n < number; ++n)
          second();
      else
        for (long n = 0; n < number; ++n)
          first();
      const double dt = (cpu_seconds() - t0) / number * 1e6;
      (so_now ? ts : tf) = dt;
    }
    std::printf("%.6f %.6f\n", ts, tf);
  }
  return 0;
}
