"""Write identified inertial parameters back into the URDF text, and the actuator YAML.

Only ``<inertial>`` elements change: each moving body's parameters (about the frame of its link,
the child link of its movable joint) go into that link's ``<inertial>`` (origin at the centre of
mass, rpy zero, inertia about the centre of mass); links merged into the body by fixed joints lose
their ``<inertial>`` (their mass is in the body's now); links welded to a fixed base keep theirs.
Joints, limits, visuals, collisions, comments, transmissions and ``<ros2_control>`` blocks are kept
(the text is edited with ``xml.etree``).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["body_links", "write_urdf", "inertial_of", "actuator_yaml"]


def _fmt(x):
    return repr(float(x)) if x != 0 else "0"


def inertial_of(p):
    """(mass, com (3,), inertia about the COM (3, 3)) of a parameter row p (10,)."""
    m = float(p[0])
    c = np.asarray(p[1:4], float) / m if m > 0 else np.zeros(3)
    xx, xy, yy, xz, yz, zz = p[4:10]
    Io = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], float)
    Ic = Io - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    return m, c, Ic


def body_links(model):
    """For each parameter row (floating base first, then the movable joints' bodies): its link,
    and the other links merged into that body by fixed joints."""
    rows = ([-1] if model.floating_base else []) + list(range(model.n))
    out = []
    for body in rows:
        main = model.base_link if body < 0 else model.link_names[body]
        merged = [ln for ln, (b, _) in model.link_frames.items() if b == body and ln != main]
        out.append((main, merged))
    return out


def write_urdf(source_text, model, pi):
    """The URDF text ``source_text`` with the inertials of ``model``'s moving bodies replaced by
    the parameter rows ``pi`` (nb, 10). Returns the new text (str)."""
    if isinstance(source_text, bytes):
        source_text = source_text.decode("utf-8")
    # keep the namespaces' prefixes (xacro, gazebo) as written
    for prefix, uri in re.findall(r'xmlns:([\w.-]+)="([^"]+)"', source_text):
        ET.register_namespace(prefix, uri)
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(source_text.encode("utf-8"), parser=parser)
    links = {el.get("name"): el for el in root.iter("link")}
    pi = np.asarray(pi, float).reshape(-1, 10)
    rows = body_links(model)
    if len(rows) != pi.shape[0]:
        raise ValueError(f"{pi.shape[0]} parameter rows for a model of {len(rows)} bodies")
    for (main, merged), p in zip(rows, pi):
        for ln in merged:
            for el in links[ln].findall("inertial"):
                links[ln].remove(el)
        link = links[main]
        for el in link.findall("inertial"):
            link.remove(el)
        m, c, Ic = inertial_of(p)
        inertial = ET.Element("inertial")
        ET.SubElement(inertial, "origin", xyz=" ".join(_fmt(v) for v in c), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=_fmt(m))
        ET.SubElement(inertial, "inertia", ixx=_fmt(Ic[0, 0]), ixy=_fmt(Ic[0, 1]),
                      ixz=_fmt(Ic[0, 2]), iyy=_fmt(Ic[1, 1]), iyz=_fmt(Ic[1, 2]),
                      izz=_fmt(Ic[2, 2]))
        inertial.text = "\n      "
        for child in inertial:
            child.tail = "\n      "
        inertial[-1].tail = "\n    "
        inertial.tail = (link.text or "\n    ")
        link.insert(0, inertial)
        if not (link.text or "").strip():
            link.text = "\n    "
    # the prolog (XML declaration, comments before the root element) is kept verbatim
    m = re.search(r"<\s*robot[\s>]", source_text)
    head = source_text[:m.start()] if m else ""
    body = ET.tostring(root, encoding="unicode").replace(" />", "/>")
    return head + body + "\n"


def actuator_yaml(joint_names, sea=None, friction=None, comment=""):
    """The actuator configuration (``actuator.*`` keys of the feedforward node and
    ``mbs-dynamics feedforward --actuator``) as YAML text.

    Args:
        sea: None (rigid) or {"stiffness": (n,), "motor_inertia": (n,), "motor_damping": (n,)}.
        friction: optional {joint: {"viscous", "coulomb"}}, written as comments (the
            feedforward has no friction keys).
    """
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append("# joints: " + ", ".join(joint_names))
    if friction:
        lines.append("# identified joint friction tau_f = Fv*qd + Fc*sign(qd) "
                     "(not an actuator key):")
        for j, f in friction.items():
            lines.append(f"#   {j}: viscous {f['viscous']:.6g}, coulomb {f['coulomb']:.6g}")
    if sea is not None and "motor_coulomb" in sea:
        lines.append("# identified motor Coulomb friction (not an actuator key): " +
                     ", ".join(f"{v:.6g}" for v in sea["motor_coulomb"]))
    lines.append("actuator:")
    if sea is None:
        lines.append("  type: rigid")
    else:
        lines.append("  type: sea")
        for key in ("stiffness", "motor_inertia", "motor_damping"):
            vals = ", ".join(repr(float(v)) for v in sea[key])
            lines.append(f"  {key}: [{vals}]")
    return "\n".join(lines) + "\n"
