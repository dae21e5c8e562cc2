"""The documentation's own Sphinx directives: nothing in the pages is copied from the code.

``{mbs-api} MODULE``
    An autosummary table and the autodoc entry of every name in ``MODULE.__all__`` (or the names
    given with ``:names:``): classes with all their public methods (inherited ones included),
    functions, exceptions, data. The names come from the installed package at build time, so a
    new public name appears without editing the page.

``{ros-parameters} NODE``
    Every ROS parameter of ``feedforward_node``, ``feedforward_proxy`` or ``sim_node``, rendered
    from the tables the nodes declare their parameters from (:mod:`mbs_dynamics.ros.parameters`,
    :data:`mbs_dynamics.control.actuators.ACTUATOR_PARAMETERS`), each one in the general index.

``{launch-files}``
    Every launch file of the package (``launch/*.launch.py`` beside this folder): its docstring
    and its arguments with their defaults, read from the files' ``DeclareLaunchArgument`` calls
    (and :func:`mbs_dynamics.ros.launch_args.common_arguments`) without importing ROS.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList
from sphinx.util.nodes import nested_parse_with_titles

ROOT = Path(__file__).resolve().parents[2]


def rst_escape(text: str) -> str:
    """Plain text made safe for reST inline markup (a table cell, a paragraph)."""
    text = " ".join(str(text).split())
    return re.sub(r"([\\`*_|<>\[\]])", r"\\\1", text)


def literal(value) -> str:
    """A Python value as an inline literal."""
    text = repr(value)
    return f"``{text}``" if text else "``''``"


class _Rst(Directive):
    """A directive that renders reST text it builds itself."""

    def render(self, lines):
        """Parse reST ``lines`` here; in a MyST page through its ``eval-rst`` directive (a MyST
        state parses Markdown)."""
        source = self.state.document.get("source", "") or ""
        if str(source).endswith(".md"):
            lines = ["`````{eval-rst}"] + lines + ["`````"]
        node = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=self.__class__.__name__),
                                 node)
        return node.children


# ------------------------------------------------------------------------------------ the API
def _kind(obj):
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.ismodule(obj):
        return "module"
    if callable(obj):
        return "function"
    return "data"


def attribute_doc(obj, name):
    """The ``#:`` comment of a module attribute, from the module that defines it (a name the
    package re-exports lazily has no comment where it is re-exported), and where it lives."""
    import sys
    from sphinx.pycode import ModuleAnalyzer
    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith("mbs_dynamics") or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # noqa: BLE001 (a compiled module has no source to analyse)
            continue
        if ("", name) in docs:
            return list(docs[("", name)]) + ["", f"Defined in :mod:`{modname}`."]
    return [f"Type: ``{type(obj).__name__}``."]


class ApiDirective(_Rst):
    """``{mbs-api} MODULE``: autosummary + autodoc of every public name of MODULE."""

    required_arguments = 1
    option_spec = {"names": directives.unchanged, "exclude": directives.unchanged}

    def run(self):
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        names = (self.options["names"].split() if "names" in self.options
                 else list(getattr(module, "__all__", [])))
        exclude = set(self.options.get("exclude", "").split())
        names = [n for n in names if n not in exclude]
        objs = {n: getattr(module, n) for n in names}
        lines = [f".. currentmodule:: {modname}", "", ".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in names if _kind(objs[n]) not in ("module", "data")]
        lines.append("")
        for n in names:
            kind = _kind(objs[n])
            if kind == "class":
                lines += [f".. autoclass:: {modname}.{n}", "   :members:", "   :undoc-members:",
                          "   :inherited-members:", "   :show-inheritance:", ""]
            elif kind == "exception":
                lines += [f".. autoexception:: {modname}.{n}", "   :no-inherited-members:", ""]
            elif kind == "function":
                lines += [f".. autofunction:: {modname}.{n}", ""]
            elif kind == "data":
                lines += [f".. py:data:: {n}", ""]
                lines += ["   " + ln for ln in attribute_doc(objs[n], n)] + [""]
        return self.render(lines)


# ----------------------------------------------------------------------------- ROS parameters
def node_parameters(node: str):
    """``name → (default, description, read_only, (min, max) or None)`` of a node, from the
    tables its code declares its parameters from."""
    from mbs_dynamics.ros import parameters as p
    tables = {"feedforward_node": p.parameter_table, "feedforward_proxy": p.proxy_parameter_table,
              "sim_node": getattr(p, "sim_parameter_table", None) or sim_node_parameters}
    if node not in tables:
        raise ValueError(f"no parameter table for {node!r} (known: {', '.join(tables)})")
    return tables[node]()


def sim_node_parameters():
    """``sim_node``'s parameters, read from the ``declare_parameter`` calls of its ``_declare``
    method (the module imports rclpy, so it is parsed, not imported): literal names, defaults,
    descriptions and ranges; descriptions taken from the shared tables (``LOOP_PARAMETERS``) and
    the loop over ``ACTUATOR_PARAMETERS`` resolved from :mod:`mbs_dynamics.ros.parameters` and
    :mod:`mbs_dynamics.control.actuators`."""
    import importlib.util
    from mbs_dynamics.control.actuators import ACTUATOR_PARAMETERS
    from mbs_dynamics.ros import parameters as p

    origin = importlib.util.find_spec("mbs_dynamics.ros.sim_node").origin
    tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    declare = next(f for f in ast.walk(tree)
                   if isinstance(f, ast.FunctionDef) and f.name == "_declare")
    names = {"LOOP_PARAMETERS": p.LOOP_PARAMETERS, "ACTUATOR_PARAMETERS": ACTUATOR_PARAMETERS}

    def value(node):
        if isinstance(node, ast.Subscript):
            return value(node.value)[value(node.slice)]
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        return ast.literal_eval(node)

    table = {}
    for stmt in declare.body:
        if isinstance(stmt, ast.For) and ast.unparse(stmt.iter).startswith("ACTUATOR_PARAMETERS"):
            for name, (default, text) in ACTUATOR_PARAMETERS.items():
                table[name] = (default, text, True, None)
            continue
        for call in ast.walk(stmt):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") ==
                    "declare_parameter" and len(call.args) >= 3):
                continue
            kw = {k.arg: k.value for k in call.args[2].keywords}
            rng = None
            for key in ("floating_point_range", "integer_range"):
                if key in kw:
                    node = kw[key]
                    node = node.elts[0] if isinstance(node, ast.List) else node
                    args = ([value(a) for a in node.args] if node.args else
                            [value(k.value) for k in node.keywords
                             if k.arg in ("from_value", "to_value")])
                    rng = (args[0], args[1])
            read_only = value(kw["read_only"]) if "read_only" in kw else False
            table[value(call.args[0])] = (value(call.args[1]), value(kw["description"]),
                                          read_only, rng)
    return table


def _default(name, default):
    if name in getattr(importlib.import_module("mbs_dynamics.ros.parameters"),
                       "STRING_ARRAY_PARAMETERS", ()) and default in ([], [""]):
        return "unset (string array)"
    return literal(default)


class RosParametersDirective(_Rst):
    """``{ros-parameters} NODE``: the node's parameter table, every entry indexed."""

    required_arguments = 1

    def run(self):
        node = self.arguments[0]
        from mbs_dynamics.ros import parameters as p
        runtime = set(getattr(p, "RUNTIME_PARAMETERS", ())) if node == "feedforward_node" \
            else set()
        table = node_parameters(node)
        lines = []
        for name, (default, text, read_only, rng) in table.items():
            change = ("changes at run time" if (name in runtime or not read_only)
                      else "read-only")
            if rng is not None:
                change += f"; range [{rng[0]:g}, {rng[1]:g}]"
            lines += [f".. rosparam:: {node}.{name}", "",
                      f"   Default {_default(name, default)}; {change}.", "",
                      f"   {rst_escape(text)}", ""]
        return self.render(lines)


# ------------------------------------------------------------------------------- launch files
def _const(node, names):
    """A literal AST value, or the name of a variable/call for what is computed."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        return ast.unparse(node)


def launch_arguments(path: Path):
    """``[(name, default, description)]`` of the ``DeclareLaunchArgument`` calls in a file, and
    of :func:`common_arguments` when the file calls it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        fn = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if fn == "DeclareLaunchArgument" and call.args:
            kw = {k.arg: _const(k.value, {}) for k in call.keywords}
            out.append((_const(call.args[0], {}), kw.get("default_value", ""),
                        kw.get("description", "")))
        elif fn == "common_arguments":
            args = [_const(a, {}) for a in call.args]
            kw = {k.arg: _const(k.value, {}) for k in call.keywords}
            common = launch_arguments(ROOT / "mbs_dynamics" / "ros" / "launch_args.py")
            subst = {"default_config": args[0] if args else kw.get("default_config", ""),
                     "namespace_description": (args[1] if len(args) > 1 else
                                               kw.get("namespace_description",
                                                      "node namespace"))}
            out += [(n, subst.get(d, d), subst.get(t, t)) for n, d, t in common]
    return out


class LaunchFilesDirective(_Rst):
    """``{launch-files}``: each launch file, its docstring and its arguments."""

    def run(self):
        lines = []
        for path in sorted((ROOT / "launch").glob("*.launch.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            title = f"``{path.name}``"
            lines += [title, "~" * len(title), "", ".. index::",
                      f"   single: {path.name} (launch file)", ""]
            summary, _, rest = doc.partition("\n")
            lines += [rst_escape(summary), "", "::", ""]
            lines += ["   " + ln for ln in rest.strip("\n").splitlines()] + [""]
            args = launch_arguments(path)
            if args:
                lines += [".. list-table::", "   :header-rows: 1", "   :widths: 25 25 50", "",
                          "   * - argument", "     - default", "     - meaning"]
                for name, default, text in args:
                    lines += [f"   * - ``{name}``", f"     - {literal(default)}",
                              f"     - {rst_escape(text)}"]
                lines.append("")
        return self.render(lines)


def setup(app):
    # ``rosparam``: one object per parameter (``node.name``), in the general index and in
    # objects.inv, referable as {rosparam}`feedforward_node.control_rate`
    app.add_object_type("rosparam", "rosparam", indextemplate="pair: %s; ROS parameter")
    app.add_directive("mbs-api", ApiDirective)
    app.add_directive("ros-parameters", RosParametersDirective)
    app.add_directive("launch-files", LaunchFilesDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
