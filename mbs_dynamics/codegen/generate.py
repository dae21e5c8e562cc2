"""``generate``: C99 source and header of one robot's dynamics (see the package docstring)."""
from __future__ import annotations

import reprlib
import re
from pathlib import Path

from . import crba, jacobian, jets, ldl
from .emit import Graph, emit_function
from .tree import CodegenError, Tree

#: Longest ``prefix`` (it names the generated files and every C identifier).
MAX_PREFIX = 64

FUNCTIONS = ("inverse_dynamics", "torque_derivatives", "mass_matrix", "gravity_torques",
             "forward_dynamics", "frame_jacobian")

_SIG = {
    "inverse_dynamics": "void {P}_inverse_dynamics(const double *q, const double *v, "
                        "const double *a, double *tau, {P}_workspace *w)",
    "torque_derivatives": "void {P}_torque_derivatives(const double *q, const double *vs, "
                          "double *out, {P}_workspace *w)",
    "mass_matrix": "void {P}_mass_matrix(const double *q, double *M, {P}_workspace *w)",
    "gravity_torques": "void {P}_gravity_torques(const double *q, double *g, {P}_workspace *w)",
    "forward_dynamics": "void {P}_forward_dynamics(const double *q, const double *v, "
                        "const double *tau, double *a, {P}_workspace *w)",
    "frame_jacobian": "void {P}_frame_jacobian_{F}(const double *q, double *J, {P}_workspace *w)",
}
_DOC = {
    "inverse_dynamics": "tau (NV) = M(q) a + C(q, v) v + g(q)  (RNEA)",
    "torque_derivatives": "out (3*NV) = tau, tau', tau'' from vs (4*NV) = v, v', v'', v''' "
                          "(row-major)",
    "mass_matrix": "M (NV*NV, row-major) = M(q)  (CRBA)",
    "gravity_torques": "g (NV) = g(q)",
    "forward_dynamics": "a (NV) = M(q)^-1 (tau - C(q, v) v - g(q))  (CRBA + L^T D L)",
    "frame_jacobian": "J (6*NV, row-major) of frame '{L}': body frame, rows (linear, angular) "
                      "(Pinocchio LOCAL)",
}


def c_name(frame):
    """The C identifier part of a frame's function name (ASCII letters, digits and ``_``)."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", str(frame))
    s = s if s and not s[0].isdigit() else "_" + s
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s):  # the substitution guarantees it
        raise CodegenError(f"frame {reprlib.repr(frame)} gives no C identifier")
    return s


#: characters a name keeps in a C comment or string literal; every other one (``*``, ``/``,
#: ``\``, ``?``, quotes, control and non-ASCII characters, ``%``) is written ``%XX`` (its UTF-8
#: bytes), so no name can end a comment, a literal or a line, or form a trigraph
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _-.,:;+=()[]{}<>#!@$^&|~")


def c_text(name):
    """``name`` for a C comment or string literal: printable ASCII with no character that can
    end either (percent-encoded UTF-8 otherwise; reversible with ``urllib.parse.unquote``)."""
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8",
                                                                            "surrogatepass"))
                   for c in str(name))


def _exprs(g, tr, fn, frame=None):
    """[(C lvalue, Expr)] of one function."""
    nv = tr.nv
    if fn == "inverse_dynamics":
        return [(f"tau[{k}]", e) for k, e in enumerate(jets.inverse_dynamics(g, tr))]
    if fn == "torque_derivatives":
        rows = jets.torque_derivatives(g, tr, 2)
        return [(f"out[{r * nv + k}]", e) for r, row in enumerate(rows) for k, e in enumerate(row)]
    if fn == "mass_matrix":
        M = crba.mass_matrix(g, tr)
        return [(f"M[{r * nv + c}]", M[r][c]) for r in range(nv) for c in range(nv)]
    if fn == "gravity_torques":
        return [(f"g[{k}]", e) for k, e in enumerate(jets.gravity_torques(g, tr))]
    if fn == "forward_dynamics":
        return [(f"a[{k}]", e) for k, e in enumerate(ldl.forward_dynamics(g, tr))]
    if fn == "frame_jacobian":
        J = jacobian.frame_jacobian(g, tr, frame)
        return [(f"J[{r * nv + c}]", J[r][c]) for r in range(6) for c in range(nv)]
    raise CodegenError(f"unknown function '{fn}': choose from {', '.join(FUNCTIONS)}")


def check_arguments(robot, functions, frames, prefix):
    """The :class:`Tree` of ``robot`` once ``functions``, ``frames`` (tuples) and ``prefix``
    are checked; CodegenError naming the first bad one."""
    # a str (None passed as "None" and failed later with AttributeError), and short: it names
    # the files P.h, P.c and the build directory (5,000 characters: OSError "File name too long")
    if not (isinstance(prefix, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix)):
        raise CodegenError(f"prefix {reprlib.repr(prefix)} is not a C identifier")
    if len(prefix) > MAX_PREFIX:
        raise CodegenError(f"prefix has {len(prefix)} characters, more than {MAX_PREFIX}")
    for fn in functions:
        if fn not in FUNCTIONS:
            raise CodegenError(f"unknown function '{fn}': choose from {', '.join(FUNCTIONS)}")
    tr = Tree(robot)
    names = {}
    for f in frames:
        tr.link_pose(f)  # unknown frame → CodegenError
        cn = c_name(f)
        if cn in names and names[cn] != f:
            raise CodegenError(f"frames '{names[cn]}' and '{f}' give the same C name '{cn}'")
        names[cn] = f
    return tr


def generate(robot, functions=FUNCTIONS, frames=(), prefix="robot", out_dir=None):
    """C99 source and header of ``robot``'s dynamics, the model's numbers folded in.

    Args:
        robot: a Robot, MimicRobot or LieJointRobot (from :func:`mbs_dynamics.load_urdf`);
            or the chart Robot of a model with spherical / floating joints that ``load_urdf``
            does not take as one robot (with a floating base or mimic joints).
        functions: which of ``FUNCTIONS`` to generate (``frame_jacobian``: one function per
            frame in ``frames``).
        frames: URDF link names whose Jacobians to generate.
        prefix: the C identifier prefix P of every generated name.
        out_dir: if given, the files are also written there.
    Returns:
        {file name: text}: ``P.h`` and ``P.c``.
    Raises:
        CodegenError (a ValueError) naming the feature or argument it cannot handle.
    """
    if isinstance(functions, str):
        functions = (functions,)
    if isinstance(frames, str):
        frames = (frames,)
    functions, frames = tuple(functions), tuple(frames)
    tr = check_arguments(robot, functions, frames, prefix)
    P = prefix
    decls, bodies, slots = [], [], 1
    todo = [(fn, None) for fn in functions if fn != "frame_jacobian"]
    if "frame_jacobian" in functions:
        todo += [("frame_jacobian", f) for f in dict.fromkeys(frames)]
    for j, (fn, frame) in enumerate(todo):
        g = Graph()
        sig = _SIG[fn].format(P=P, F=c_name(frame) if frame else "")
        # a frame Jacobian's static parts are named by its index (P_frame3_part0): no frame
        # name can clash with them (P_frame_jacobian_a_part0 was frame 'a''s and 'a_part0''s)
        name = fn if frame is None else f"frame{j}"
        text, k = emit_function(g, sig, _exprs(g, tr, fn, frame), P, name)
        slots = max(slots, k)
        decls.append(f"/* {_DOC[fn].format(L=c_text(frame))} */\n{sig};")
        bodies.append(text)
    guard = f"{P.upper()}_DYNAMICS_H"
    model = tr.model
    joints = [c_text(nm) for nm in tr.public_names]
    rname = c_text(model.name)
    layout = ("q = (x, y, z, qx, qy, qz, qw, joints), v = (base linear, base angular (base "
              "frame), joints)" if tr.fb else "q = v = joints")
    if model.lie_joints:
        layout = layout.replace("q = v = joints", "q = joints, v = joint velocities") + (
            ";\n * a spherical joint: q (qx, qy, qz, qw), v its child's angular velocity in the "
            "child frame;\n * a floating joint: q (x, y, z, qx, qy, qz, qw), v (linear, angular) "
            "in the child frame;\n * each quaternion is normalised, not checked")
    header = f"""/* {P}.h: dynamics of robot '{rname}' generated by mbs_dynamics.codegen.
 * Names are percent-encoded (%XX: UTF-8 bytes of characters unsafe in C text).
 * C99, libm only; no allocation, no global state: every function is re-entrant given its own
 * {P}_workspace (caller-owned, contents need no initialisation). Layout: {layout}.
 * Joints: {', '.join(joints)}.
 * Arrays may alias: every output is written after every input has been read. */
#ifndef {guard}
#define {guard}

#ifdef __cplusplus
extern "C" {{
#endif

#define {P}_NQ {tr.nq}
#define {P}_NV {tr.nv}

/* scratch through which the parts of a large function pass values */
typedef struct {{
  double s[{slots}];
}} {P}_workspace;

/* SHA-256 of the model's numbers and the generator version */
extern const char {P}_model_hash[];

{chr(10).join(decls)}

#ifdef __cplusplus
}}
#endif

#endif /* {guard} */
"""
    source = (f"/* {P}.c: generated by mbs_dynamics.codegen for robot '{rname}'. */\n"
              f"#include <math.h>\n#include \"{P}.h\"\n\n"
              f"const char {P}_model_hash[] = \"{tr.hash}\";\n\n" + "\n".join(bodies))
    files = {f"{P}.h": header, f"{P}.c": source}
    if out_dir is not None:
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        for nm, text in files.items():
            (d / nm).write_text(text)
    return files
