"""``load_urdf``: a URDF becomes a :class:`~.robot.Robot` (or a :class:`~.model.mimic.MimicRobot`
when it has mimic joints) — the one entry from a robot description to the public API."""
from __future__ import annotations

from .model.mimic import wrap
from .model.model import build
from .model.urdf import URDFError
from .robot import Robot


def load_urdf(source, *, base_link=None, tip_link=None, locked_joints=None,
              gravity=(0.0, 0.0, -9.81), floating_base=False, loops=None, actuated=None):
    """Load a robot from URDF.

    A ``planar`` joint, and this package's extension types ``universal`` (``<axis>`` then
    ``<axis2>``) and ``cylindrical``, become the 1-DOF joints they are, through massless links
    (:func:`~.model.model.composite_parts`).

    Args:
        source: URDF XML text (str or bytes) or a path to a .urdf file.
        base_link: link fixed to the world (default: the URDF root). Gravity is expressed in it.
        tip_link: if given, keep only the chain base_link → tip_link (with the links rigidly
            attached to it by fixed joints); movable branches off the chain are dropped.
        locked_joints: dict joint name → position: those joints become rigid (their subtree's
            mass stays), like Pinocchio's ``buildReducedModel``.
        gravity: gravitational acceleration (3,) in the base frame (the world frame with a
            floating base) [m/s²].
        floating_base: the base link is a free body (legged robots, humanoids, free flyers):
            q = (x, y, z, qx, qy, qz, qw, joints), v = (linear, angular velocity of the base in
            its frame, joint rates) — Pinocchio's free-flyer layout.
        loops: closed loops: a list of loop dicts ``{"name", "frame_a", "frame_b", "origin_a":
            {"xyz", "rpy"}, "origin_b", "type": "connect" | "weld" | "revolute"}`` or the path
            of a YAML file with a ``loops:`` list (:mod:`~.loops.spec`).
        actuated: with ``loops``, the independent (motor) joints; default: chosen by the
            package (QR with pivoting of the constraint Jacobian), named in a LoopWarning.
    Returns:
        A :class:`~.loops.robot.ClosedLoopRobot` when ``loops`` is given (the Robot API in the
        actuated coordinates; a :class:`~.loops.lie.LieClosedLoopRobot` when the tree has
        spherical or floating joints, passive, full coordinates on their group); else a
        :class:`Robot`; a :class:`~.mimic.MimicRobot` (same API, independent coordinates:
        ``joint_names`` lists the independent joints, ``mimic_joints`` the mimic map) when the
        URDF has mimic joints that are not locked, a
        :class:`~.model.lie_joints.LieJointRobot` when it has spherical or floating joints
        inside the tree. Locking a master locks its mimics too.
    Raises:
        URDFError (a ValueError) naming the joint or link at fault: malformed XML, a
        spherical or floating joint together with ``floating_base`` or mimic joints, unknown
        links, a mimic of a missing joint or a mimic cycle, non-finite or
        absurd values, an inertia that is not positive semi-definite, a movable joint that moves
        no mass, a tip_link not below base_link, ... (README, "Physically valid models").
    Warns:
        URDFWarning naming the links: zero mass with a non-zero inertia, principal moments that
        violate the triangle inequality (kept as given).
    """
    robot = Robot(build(source, base_link=base_link, tip_link=tip_link,
                        locked_joints=locked_joints, gravity=gravity,
                        floating_base=floating_base))
    if loops is None:
        if actuated is not None:
            raise ValueError("actuated= needs loops=")
        return wrap(robot)
    if robot.model.lie_joints:
        from .loops.lie import LieClosedLoopRobot
        return LieClosedLoopRobot(robot, loops, actuated)
    from .loops.robot import ClosedLoopRobot
    return ClosedLoopRobot(robot, loops, actuated)


def from_dh(table, convention="standard", *, inertials, joint_types=None, joint_names=None,
            link_names=None, base_link="base", limits=None, frames=None,
            gravity=(0.0, 0.0, -9.81), name="dh_robot"):
    """A robot from a Denavit–Hartenberg table: the same :class:`Robot` as the equivalent URDF
    (:func:`~.model.sources.dh_urdf` writes it; ``robot.to_urdf()`` gives it back).

    Args:
        table: (n, 4) rows ``(a, alpha, d, theta)`` [m, rad, m, rad] (modified: row i holds
            aᵢ₋₁, αᵢ₋₁, dᵢ, θᵢ).
        convention: ``"standard"`` (distal, Denavit–Hartenberg) or ``"modified"`` (proximal,
            Craig).
        inertials: n link inertials in DH frame i, ``dict(mass=, com=, inertia=)`` [kg, m,
            kg m² about the COM] or None (massless).
        joint_types, joint_names, link_names, base_link, limits, frames, name: see
            :func:`~.model.sources.dh_urdf`.
        gravity: (3,) in the base frame [m/s²].
    Returns:
        A :class:`Robot`.
    Raises:
        ValueError: naming the argument (a wrong shape, NaN, an unknown convention or joint
            type).
        URDFError: as :func:`load_urdf` (a joint that moves no mass, an invalid inertia).
    """
    from .model.sources import dh_urdf
    text = dh_urdf(table, convention, inertials=inertials, joint_types=joint_types,
                   joint_names=joint_names, link_names=link_names, base_link=base_link,
                   limits=limits, frames=frames, name=name)
    return Robot(build(text, gravity=gravity))


def from_screws(Y, A, *, inertials, parent=None, joint_names=None, link_names=None,
                base_link="base", limits=None, frames=None, gravity=(0.0, 0.0, -9.81),
                name="screw_robot"):
    """A robot from zero-reference joint screw coordinates Y_i and body reference poses A_i
    (Müller 2018, §2.4: C_i(q) = exp(Y₁q₁)···exp(Y_i q_i) A_i): the same :class:`Robot` as the
    equivalent URDF (:func:`~.model.sources.screws_urdf`).

    Args:
        Y: (n, 6) spatial screws at q = 0, linear part first: ``(y×e + h e, e)`` for a
            revolute (pitch h = 0) or helical (h [m/rad]) joint through the point y with unit
            axis e, ``(e, 0)`` for a prismatic one [m, 1].
        A: (n, 4, 4) body poses at q = 0 in the base frame.
        inertials: n body inertials in body frame i (as :func:`from_dh`).
        parent: (n,) parent body indices (−1: the base); default a serial chain.
        joint_names, link_names, base_link, limits, frames, name: see :func:`from_dh`.
        gravity: (3,) in the base frame [m/s²].
    Returns:
        A :class:`Robot`; a :class:`~.model.mimic.MimicRobot` (same API) when a joint is
        helical (a revolute joint and a prismatic one mimicking it, :mod:`~.model.sources`).
        Its coordinates are ordered as ``robot.joint_names``: depth first from the base, the
        children of a body by joint name (as any URDF), which on a tree can differ from the
        order of ``Y``.
    Raises:
        ValueError: naming the argument and joint (shapes, NaN, a screw that is neither a unit
            rotation nor a unit translation).
        URDFError: as :func:`load_urdf`.
    """
    from .model.sources import screws_urdf
    text = screws_urdf(Y, A, inertials=inertials, parent=parent, joint_names=joint_names,
                       link_names=link_names, base_link=base_link, limits=limits,
                       frames=frames, name=name)
    return wrap(Robot(build(text, gravity=gravity)))
