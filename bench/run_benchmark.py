#!/usr/bin/env python3
"""Side-by-side speed benchmark against Pinocchio, dynibo and MuJoCo: writes bench/README.md and
bench/scaling.png (bench/runner.py and the modules it imports: one per concern). Runs from a repository checkout: the checkout's
``mbs_dynamics`` is imported (built in place where it has compiled parts), unless
``--use-installed`` is given.

    python3 bench/run_benchmark.py --startup   # full run as in bench/README.md
    python3 bench/run_benchmark.py --quick     # smoke run (seconds)
    python3 bench/run_benchmark.py --use-installed   # measure the installed package instead
    python3 bench/run_benchmark.py --help
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if "--use-installed" not in sys.argv[1:]:
    sys.path.insert(0, str(HERE.parent))  # this checkout's mbs_dynamics, not an installed one

from runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
