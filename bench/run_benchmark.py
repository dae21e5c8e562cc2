#!/usr/bin/env python3
"""Side-by-side speed benchmark against Pinocchio and MuJoCo: writes bench/README.md and
bench/scaling.png. Thin wrapper of :mod:`mbs_dynamics.benchmark` (also ``mbs-dynamics bench``).

    python3 bench/run_benchmark.py            # full run, < 5 minutes
    python3 bench/run_benchmark.py --help
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

from mbs_dynamics.benchmark import main  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[1:]
    if not any(a == "--out-dir" or a.startswith("--out-dir=") for a in argv):
        argv = ["--out-dir", str(HERE)] + argv
    sys.exit(main(argv))
