"""The house of layers (issue 23): the import graph drawn from the package's source — every
``import`` and ``from … import`` and Cython ``cimport``, at module level or inside functions — has no
cycle between modules nor between the layers (subpackages), nothing inside imports the package's
``__init__``, and at most eight modules stay at the package top."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mbs_dynamics"
PKG = "mbs_dynamics"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_pkg: bool, level: int, module: str | None) -> str:
    base = current.split(".") if is_pkg else current.split(".")[:-1]
    if level:
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))
    return module or ""


def _known(name: str, modules: set[str]) -> str | None:
    """The longest known module that ``name`` names or lies in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph():
    files = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".pyx", ".pxd")
             and "__pycache__" not in p.parts]
    if not files:
        pytest.skip("the package source is not beside the tests")
    modules = {_module_name(p) for p in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for p in files:
        me = _module_name(p)
        is_pkg = p.stem == "__init__"
        text = p.read_text(encoding="utf-8")
        targets = []
        if p.suffix == ".py":
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Import):
                    targets += [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(me, is_pkg, node.level, node.module)
                    # `from pkg import sub` imports pkg.sub when sub is a module
                    subs = [f"{base}.{a.name}" for a in node.names]
                    targets += [s for s in subs if s in modules] or [base]
        else:  # Cython: absolute (c)imports only, by this project's rule
            targets += re.findall(r"^\s*from\s+([\w.]+)\s+c?import", text, re.M)
            targets += re.findall(r"^\s*c?import\s+([\w.]+)", text, re.M)
        for t in targets:
            k = _known(t, modules) if t.startswith(PKG) else None
            if k and k != me:
                edges[me].add(k)
    return modules, edges


def _cycles(edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def _layer(m: str) -> str:
    parts = m.split(".")
    return ".".join(parts[:2])


def test_no_module_imports_the_package_init():
    _, edges = import_graph()
    bad = sorted(m for m, ts in edges.items() if PKG in ts and m != PKG)
    assert not bad, f"modules importing the package's __init__: {bad}"


def test_no_import_cycle_between_modules():
    _, edges = import_graph()
    # a subpackage's __init__ importing its own children is not a cycle of the house
    assert _cycles(edges) == []


def test_no_import_cycle_between_layers():
    _, edges = import_graph()
    layers: dict[str, set[str]] = {}
    for m, ts in edges.items():
        if m == PKG:
            continue
        layers.setdefault(_layer(m), set()).update(_layer(t) for t in ts if _layer(t) != _layer(m))
    assert _cycles(layers) == [], layers


def test_at_most_eight_modules_at_the_top():
    top = sorted(p.name for p in ROOT.iterdir() if p.suffix in (".py", ".pyx"))
    assert len(top) <= 8, top


def test_no_cli_module_over_400_lines():
    """The command line is a package, one module per command (issue 34)."""
    cli = ROOT / "cli"
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in cli.glob("*.py")}
    assert "__init__.py" in sizes and len(sizes) >= 7, sizes
    assert not {k: v for k, v in sizes.items() if v > 400}, sizes


def test_the_graph_sees_imports():
    """The checker itself: it finds an edge that is known to exist, and a cycle when one is made."""
    _, edges = import_graph()
    assert "mbs_dynamics.kernels._data" in edges["mbs_dynamics.kernels._rnea"]
    assert "mbs_dynamics.model.model" in edges["mbs_dynamics.loader"]
    assert "mbs_dynamics.cli._common" in edges["mbs_dynamics.cli.info"]
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]


def _module_level_importorskips(text):
    """Line numbers of ``pytest.importorskip`` calls outside functions and classes."""
    lines = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        lines += [call.lineno for call in ast.walk(node) if isinstance(call, ast.Call)
                  and isinstance(call.func, ast.Attribute) and call.func.attr == "importorskip"]
    return lines


def test_no_test_module_skips_itself_whole():
    """A module-level ``pytest.importorskip`` skips the whole module at collection — under ROS's
    launch_testing pytest plugin that becomes a skip of the whole collection; tests skip one by
    one instead (``pytestmark = pytest.mark.skipif(...)`` or importorskip inside the test)."""
    assert _module_level_importorskips(
        'import pytest\npin = pytest.importorskip("pinocchio")\n'
        'def test_a():\n    pytest.importorskip("x")\n') == [2]   # the check sees one
    offenders = [f"{path.relative_to(ROOT.parent)}:{line}"
                 for path in sorted((ROOT.parent / "test").rglob("*.py"))
                 for line in _module_level_importorskips(path.read_text())]
    assert offenders == []


# rooms whose neighbours are fixed by their issue: room → (the rooms it may import, the modules
# outside it that may import it — the facade and the CLI)
ROOMS = {
    "mbs_dynamics.calibration": ({"mbs_dynamics.kernels", "mbs_dynamics.model",
                                  "mbs_dynamics.kinematics"},
                                 {"mbs_dynamics", "mbs_dynamics.robot", "mbs_dynamics.loader",
                                  "mbs_dynamics.cli"}),
}


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_room_neighbours(room):
    _, edges = import_graph()
    may_import, importers = ROOMS[room]
    inside = {m for m in edges if _layer(m) == room}
    assert inside, f"{room} has no modules"
    out = {_layer(t) for m in inside for t in edges[m]} - {room}
    assert out <= may_import, f"{room} imports {sorted(out - may_import)}"
    users = {m for m, ts in edges.items() if m not in inside and any(t in inside for t in ts)}
    assert all(u in importers or u.startswith("mbs_dynamics.cli.") for u in users), sorted(users)
