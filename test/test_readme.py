"""Every Python block of README.md and of the documentation (doc/**/*.md) runs as written, in a
fresh interpreter, from an empty directory (so nothing depends on the checkout or on files the
reader does not have). Blocks that need an optional package (Pinocchio, MuJoCo, matplotlib,
example-robot-data, rosbags) are skipped where it is not installed; the page says so."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README] + sorted((ROOT / "doc").rglob("*.md"))


def _blocks():
    out = []
    for page in PAGES:
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        out += [(page.relative_to(ROOT).as_posix(), text[:m.start()].count("\n") + 1, m.group(1))
                for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]
    return out


BLOCKS = _blocks()


def test_the_readme_has_python_blocks():
    assert sum(1 for page, _, _ in BLOCKS if page == "README.md") >= 1
    assert len(BLOCKS) >= 15


@pytest.mark.parametrize("page,line,code", BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_readme_block_runs(page, line, code, tmp_path):
    needs = {"pinocchio": "pin", "mujoco": "mujoco", "matplotlib": "matplotlib",
             "example_robot_data": "example-robot-data", "rosbags": "rosbags"}
    for mod in needs:
        if re.search(rf"\bimport {mod}\b|\bfrom {mod}\b", code):
            pytest.importorskip(mod)
    env = {"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin",
           **{k: v for k, v in os.environ.items()
              if k.startswith(("PYTHON", "HOME", "OMP", "OPENBLAS", "VIRTUAL"))}}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, f"{page} block at line {line} failed:\n{r.stderr[-3000:]}"
