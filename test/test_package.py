"""The package's public surface: every name in __all__ resolves, the core import stays light."""
import subprocess
import tempfile
import sys

import mbs_dynamics as mbs


def test_public_names_resolve():
    for name in mbs.__all__:
        assert getattr(mbs, name) is not None, name


def test_core_import_does_not_load_rclpy_or_the_rest():
    code = ("import sys, mbs_dynamics; "
            "print(any(m in sys.modules for m in ('rclpy', 'mbs_dynamics.control.trajectory', 'matplotlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    assert out.stdout.strip() == "False"


def test_unknown_attribute():
    import pytest
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mbs.nope
