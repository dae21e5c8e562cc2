"""The read-only description of a robot — sizes, names, limits, gravity and mass of its frozen
model — as properties, one copy shared by :class:`mbs_dynamics.Robot` and
:class:`~mbs_dynamics.model.lie_joints.LieJointRobot`."""
from __future__ import annotations

__all__ = ["RobotDescription", "refuse_lie_joints", "LIE_REASONS"]


#: why a capability of 1-DOF joint coordinates refuses a spherical / floating joint
LIE_REASONS = {
    "identification from joint logs": "a joint log has one position per joint, not a "
                                      "quaternion",
    "exciting trajectories": "a Fourier series drives 1-DOF joint coordinates, not a "
                             "quaternion",
    "feedforward": "joint-space feedforward drives 1-DOF joints, and this joint's "
                   "configuration is a quaternion (robot.torque_derivatives gives its τ, τ′, "
                   "τ″)",
}


def refuse_lie_joints(robot, capability, why=None):
    """ValueError ``"<capability>: joint '<name>' (<kind>): <why>"`` naming the first spherical
    or inner floating joint of ``robot`` (whose configuration is a quaternion, not joint
    angles), for a capability that works on 1-DOF joint coordinates only; nothing otherwise.
    ``why`` defaults to :data:`LIE_REASONS` of the capability. A closed-loop robot passes: its
    spherical / floating joints are passive (:class:`~mbs_dynamics.loops.lie.LieClosedLoopRobot`)
    and its coordinates are the actuated 1-DOF joints."""
    lie = getattr(robot, "lie_joints", None)
    if lie and not getattr(robot, "loop_names", ()):
        name, kind = next(iter(lie.items()))
        why = why or LIE_REASONS.get(capability, "it works on 1-DOF joint coordinates")
        raise ValueError(f"{capability}: joint '{name}' ({kind}): {why}")


class RobotDescription:
    """Properties read from ``self._model`` and the sizes ``self._n``, ``self._nq``,
    ``self._nv``, ``self._fb`` a subclass sets."""

    __slots__ = ()

    @property
    def model(self):
        """The frozen model."""
        return self._model

    @property
    def n(self) -> int:
        """Number of movable joints (velocity coordinates of the joints)."""
        return self._n

    @property
    def nq(self) -> int:
        """Configuration size: n, 7 + n with a floating base, 4 per spherical and 7 per inner
        floating joint (instead of their 3 and 6 velocity coordinates)."""
        return self._nq

    @property
    def nv(self) -> int:
        """Velocity (and force) size: n, or 6 + n with a floating base."""
        return self._nv

    @property
    def floating_base(self) -> bool:
        """True if the base link is a free body (``load_urdf(..., floating_base=True)``)."""
        return self._fb

    @property
    def joint_names(self):
        return self._model.joint_names

    @property
    def link_names(self):
        return self._model.link_names

    @property
    def joint_types(self):
        return self._model.joint_types

    @property
    def lower(self):
        return self._model.lower

    @property
    def upper(self):
        return self._model.upper

    @property
    def velocity_limit(self):
        return self._model.velocity_limit

    @property
    def effort_limit(self):
        return self._model.effort_limit

    @property
    def gravity(self):
        return self._model.gravity

    @property
    def base_link(self):
        return self._model.base_link

    @property
    def total_mass(self) -> float:
        """Mass of every link, the base's included [kg]."""
        return float(self._model.inertias[:, 3, 3].sum() + self._model.base_inertia[3, 3])
