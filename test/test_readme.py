"""Every Python block of README.md runs as written, in a fresh interpreter, from an empty
directory (so nothing depends on the checkout or on files the reader does not have)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks():
    if not README.exists():
        return []
    text = README.read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


BLOCKS = _blocks()


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("line,code", BLOCKS, ids=[f"line{n}" for n, _ in BLOCKS])
def test_readme_block_runs(line, code, tmp_path):
    needs = {"pinocchio": "pin", "mujoco": "mujoco", "matplotlib": "matplotlib",
             "example_robot_data": "example-robot-data"}
    for mod in needs:
        if re.search(rf"\bimport {mod}\b|\bfrom {mod}\b", code):
            pytest.importorskip(mod)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600, env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin",
                                                    **{k: v for k, v in __import__("os").environ.items()
                                                       if k.startswith(("PYTHON", "HOME", "OMP", "OPENBLAS", "VIRTUAL"))}})
    assert r.returncode == 0, f"README.md block at line {line} failed:\n{r.stderr[-3000:]}"
