"""``python -m mbs_dynamics.cli``: the ``mbs-dynamics`` command."""
import sys

from . import main

sys.exit(main())
