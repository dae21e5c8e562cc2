"""A small straight-line emitter: scalar expression DAGs → C99.

:class:`Graph` hash-conses every node, so an expression built twice is one node (common
subexpressions are shared by construction), and folds as it builds: constants are evaluated in
double precision exactly as C would, ``x·0 = 0``, ``x·1 = x``, ``x + 0 = x``, ``−(−x) = x``,
``x − x = 0``; commutative operands are ordered, so ``a·b`` and ``b·a`` are one node. Every fold is
exact in IEEE arithmetic (no re-association, no ``x/y → x·(1/y)``), so the generated code computes
the same operations the algorithm states, minus the ones with an exact zero or one.

:func:`emit_function` writes one C function: every operation a ``const double`` local, in the
order the algorithm created them (forward pass, then backward pass: good locality). A function
with more than ``CHUNK`` operations is split into static parts that pass the values they share
through the caller-owned workspace (``w->s``), which keeps the compiler's time linear in the
robot's size; nothing else is ever stored in memory.
"""
from __future__ import annotations

import math

#: operations per emitted C function part (a larger part lets the compiler schedule more freely
#: but its time grows faster than linearly)
CHUNK = 4000

_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_UN = {"sin": "sin", "cos": "cos", "sqrt": "sqrt"}


class Expr:
    """A node of a :class:`Graph`: ``op`` ∈ const, in, add, sub, mul, div, neg, sin, cos, sqrt."""

    __slots__ = ("g", "op", "args", "val", "id")

    def __init__(self, g, op, args, val, id_):
        self.g, self.op, self.args, self.val, self.id = g, op, args, val, id_

    # arithmetic with Python numbers and other nodes of the same graph
    def __add__(self, o):
        return self.g.add(self, o)

    __radd__ = __add__

    def __sub__(self, o):
        return self.g.sub(self, o)

    def __rsub__(self, o):
        return self.g.sub(o, self)

    def __mul__(self, o):
        return self.g.mul(self, o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self.g.div(self, o)

    def __rtruediv__(self, o):
        return self.g.div(o, self)

    def __neg__(self):
        return self.g.neg(self)

    @property
    def is_const(self):
        return self.op == "const"

    def __repr__(self):
        return f"Expr({self.op}, {self.val if self.op in ('const', 'in') else self.id})"


class Graph:
    """The node table (see the module docstring)."""

    def __init__(self):
        self.nodes = []
        self._table = {}
        self.zero = self.const(0.0)
        self.one = self.const(1.0)

    def _node(self, key, op, args, val=None):
        e = self._table.get(key)
        if e is None:
            e = Expr(self, op, args, val, len(self.nodes))
            self.nodes.append(e)
            self._table[key] = e
        return e

    def const(self, x):
        x = float(x)
        if not math.isfinite(x):
            raise ValueError(f"non-finite constant {x} in the model")
        if x == 0.0:
            x = 0.0  # −0 and 0 are one constant (exact: they differ only in a sign of zero)
        return self._node(("const", x), "const", (), x)

    def input(self, name, index):
        """The scalar ``name[index]`` of an argument array."""
        return self._node(("in", name, index), "in", (), (name, index))

    def _e(self, x):
        return x if isinstance(x, Expr) else self.const(x)

    def add(self, a, b):
        a, b = self._e(a), self._e(b)
        if a.is_const and b.is_const:
            return self.const(a.val + b.val)
        if a.is_const and a.val == 0.0:
            return b
        if b.is_const and b.val == 0.0:
            return a
        if b.op == "neg":
            return self.sub(a, b.args[0])
        if a.op == "neg":
            return self.sub(b, a.args[0])
        if a.id > b.id:
            a, b = b, a
        return self._node(("add", a.id, b.id), "add", (a, b))

    def sub(self, a, b):
        a, b = self._e(a), self._e(b)
        if a.is_const and b.is_const:
            return self.const(a.val - b.val)
        if b.is_const and b.val == 0.0:
            return a
        if a.is_const and a.val == 0.0:
            return self.neg(b)
        if a is b:
            return self.zero
        if b.op == "neg":
            return self.add(a, b.args[0])
        if a.op == "neg":  # −x − b = −(x + b)
            return self.neg(self.add(a.args[0], b))
        return self._node(("sub", a.id, b.id), "sub", (a, b))

    def mul(self, a, b):
        a, b = self._e(a), self._e(b)
        if a.is_const and b.is_const:
            return self.const(a.val * b.val)
        if b.is_const:
            a, b = b, a
        if a.is_const:
            if a.val == 0.0:
                return self.zero
            if a.val == 1.0:
                return b
            if a.val == -1.0:
                return self.neg(b)
            if a.val < 0.0:  # c·x with c < 0: −(|c|·x), so that ±c·x share one product
                return self.neg(self.mul(self.const(-a.val), b))
        if a.op == "neg" and b.op == "neg":
            return self.mul(a.args[0], b.args[0])
        if a.op == "neg":
            return self.neg(self.mul(a.args[0], b))
        if b.op == "neg":
            return self.neg(self.mul(a, b.args[0]))
        if a.id > b.id:
            a, b = b, a
        return self._node(("mul", a.id, b.id), "mul", (a, b))

    def div(self, a, b):
        a, b = self._e(a), self._e(b)
        if b.is_const and b.val == 0.0:
            raise ZeroDivisionError("division by an exact zero in generated code")
        if a.is_const and b.is_const:
            return self.const(a.val / b.val)
        if b.is_const and b.val == 1.0:
            return a
        if a.is_const and a.val == 0.0:
            return self.zero
        return self._node(("div", a.id, b.id), "div", (a, b))

    def neg(self, a):
        a = self._e(a)
        if a.is_const:
            return self.const(-a.val)
        if a.op == "neg":
            return a.args[0]
        if a.op == "sub":  # −(x − y) = y − x exactly
            return self.sub(a.args[1], a.args[0])
        return self._node(("neg", a.id), "neg", (a,))

    def fn(self, name, a):
        """sin, cos or sqrt of ``a``."""
        a = self._e(a)
        if a.is_const:
            return self.const(getattr(math, name)(a.val))
        return self._node((name, a.id), name, (a,))

    def dot(self, xs, ys):
        """Σ x·y, left to right."""
        acc = self.zero
        for x, y in zip(xs, ys):
            acc = self.add(acc, self.mul(x, y))
        return acc


def _lit(x):
    s = repr(float(x))
    if "e" not in s and "." not in s and "n" not in s:
        s += ".0"
    return f"({s})" if x < 0 else s


def count_ops(outputs):
    """The number of operation nodes the outputs depend on (the emitted code's size)."""
    return len(_reachable([e for _, e in outputs]))


def _reachable(roots):
    seen, stack = set(), [e for e in roots if e.op not in ("const", "in")]
    while stack:
        e = stack.pop()
        if e.id in seen:
            continue
        seen.add(e.id)
        stack.extend(a for a in e.args if a.op not in ("const", "in") and a.id not in seen)
    return seen


def emit_function(g, signature, outputs, prefix, name, chunk=None):
    """C text of ``signature`` (``"void P_f(const double *q, ..., P_workspace *w)"``) computing
    ``outputs`` [(C lvalue such as ``"tau[3]"``, Expr)].

    Returns ``(text, slots)``: ``slots`` is the number of doubles of ``w->s`` the parts use to
    pass values (0 for a function emitted in one piece)."""
    chunk = chunk or CHUNK
    ids = sorted(_reachable([e for _, e in outputs]))
    nodes = g.nodes
    parts = [ids[i:i + chunk] for i in range(0, len(ids), chunk)] or [[]]
    part_of = {}
    for k, p in enumerate(parts):
        for i in p:
            part_of[i] = k
    # values used in a later part than the one defining them travel through w->s
    slot = {}
    for k, p in enumerate(parts):
        for i in p:
            for a in nodes[i].args:
                if a.id in part_of and part_of[a.id] < k and a.id not in slot:
                    slot[a.id] = len(slot)
    last = len(parts) - 1
    for _, e in outputs:
        if e.id in part_of and part_of[e.id] < last and e.id not in slot:
            slot[e.id] = len(slot)

    def ref(a, k):
        if a.op == "const":
            return _lit(a.val)
        if a.op == "in":
            return f"{a.val[0]}[{a.val[1]}]"
        if part_of[a.id] < k:
            return f"w->s[{slot[a.id]}]"
        return f"a{a.id}"

    def body(k, p):
        lines = []
        for i in p:
            e = nodes[i]
            if e.op in _BIN:
                x = f"{ref(e.args[0], k)} {_BIN[e.op]} {ref(e.args[1], k)}"
            elif e.op == "neg":
                x = f"-{ref(e.args[0], k)}"
            else:
                x = f"{_UN[e.op]}({ref(e.args[0], k)})"
            lines.append(f"  const double a{i} = {x};")
            if i in slot:
                lines.append(f"  w->s[{slot[i]}] = a{i};")
        return lines

    # the parameter list, for the static parts and for the call
    params = signature[signature.index("(") + 1:signature.rindex(")")]
    args = ", ".join(p.strip().split("*")[-1].strip() for p in params.split(","))
    text = []
    for k, p in enumerate(parts[:-1]):
        text.append(f"static void {prefix}_{name}_part{k}({params})\n{{")
        text.extend(_void_unused(params, _inputs_of(p, nodes), True))
        text.extend(body(k, p))
        text.append("}\n")
    text.append(f"{signature}\n{{")
    for k in range(last):
        text.append(f"  {prefix}_{name}_part{k}({args});")
    body_last = body(last, parts[last])
    used = _inputs_of(parts[last], nodes) | {e.val[0] for _, e in outputs if e.op == "in"}
    text.extend(_void_unused(params, used, last > 0 or bool(slot)))
    text.extend(body_last)
    for lhs, e in outputs:
        text.append(f"  {lhs} = {ref(e, last)};")
    text.append("}\n")
    return "\n".join(text), len(slot)


def _names(params):
    return [p.strip().split("*")[-1].strip() for p in params.split(",")]


def _inputs_of(part, nodes):
    """The argument arrays a part reads."""
    return {a.val[0] for i in part for a in nodes[i].args if a.op == "in"}


def _void_unused(params, used, uses_w):
    """``(void)x;`` for the parameters a part does not read (-Wunused-parameter)."""
    out = []
    for nm in _names(params):
        if nm == "w":
            if not uses_w:
                out.append("  (void)w;")
        elif nm not in used:
            out.append(f"  (void){nm};")
    return out
