"""What ``colcon build`` installs for ROS 2 users: the package found through the ament index,
its three node executables where ``ros2 run`` looks, every launch file and config of the source
tree in its share folder, and compiled kernels (nothing compiles at run time).

Runs where the package is built with colcon and its install space sourced (CI's ROS run).
"""
from __future__ import annotations

import glob
import importlib.machinery
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)

REPO = Path(__file__).resolve().parents[2]
NODES = ("feedforward_node", "sim_node", "feedforward_proxy")


def _prefix():
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        return Path(get_package_prefix("mbs_dynamics"))
    except PackageNotFoundError:
        pytest.fail("mbs_dynamics is not in the ament index: colcon build it and source "
                    "install/setup.bash")


def test_launch_files_and_configs_are_installed():
    share = _prefix() / "share" / "mbs_dynamics"
    for folder, pattern in (("launch", "*.py"), ("config", "*.yaml")):
        wanted = sorted(os.path.basename(p) for p in glob.glob(str(REPO / folder / pattern)))
        assert wanted, folder
        got = sorted(p.name for p in (share / folder).glob(pattern))
        assert got == wanted, folder
        for name in wanted:
            assert (share / folder / name).read_bytes() == (REPO / folder / name).read_bytes()
    assert (share / "package.xml").read_bytes() == (REPO / "package.xml").read_bytes()


def test_node_executables_are_where_ros2_run_looks():
    lib = _prefix() / "lib" / "mbs_dynamics"
    for node in NODES:
        assert (lib / node).is_file() and os.access(lib / node, os.X_OK), node
    out = subprocess.run(["ros2", "pkg", "executables", "mbs_dynamics"], capture_output=True,
                         text=True, timeout=600)   # a loaded machine: 2-20 s
    assert out.returncode == 0, out.stderr
    listed = {tuple(line.split()) for line in out.stdout.splitlines()}
    assert {("mbs_dynamics", node) for node in NODES} <= listed, out.stdout


def test_installed_kernels_are_compiled():
    prefix = _prefix()
    sites = glob.glob(str(prefix / "lib" / "python3*" / "site-packages" / "mbs_dynamics"))
    assert len(sites) == 1, sites
    kernels = Path(sites[0]) / "kernels"
    built = [p.name for p in kernels.iterdir()
             if p.name.startswith("_rnea.") and p.name.endswith(
                 tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    assert built, sorted(p.name for p in kernels.iterdir())
    assert (Path(sites[0]) / "data" / "robots" / "arm7.urdf").is_file()
