"""The names of ``forward_dynamics``'s methods, and the deprecated ones they replace.

``method="dca"`` is the acceleration-level divide-and-conquer assembly (Featherstone's DCA, in the
form of the assembly of Chadaj, Malczyk and Frączek 2017); it was first called ``"hdca"``, the
name of that paper's Hamiltonian (momentum-level) algorithm, which is what
``simulate(method="hdca")`` integrates. ``"hdca"`` keeps working in ``forward_dynamics`` for one
release, with a :class:`DeprecationWarning` naming ``"dca"``.
"""
from __future__ import annotations

import warnings

#: Deprecated ``forward_dynamics`` method names -> their new names.
RENAMED = {"hdca": "dca"}


def forward_dynamics_method(method, allowed):
    """The ``forward_dynamics`` method ``method`` names, one of ``allowed``.

    Args:
        method: the name given by the caller.
        allowed: the names this robot's ``forward_dynamics`` takes (new names only).

    Returns:
        ``method``, or the new name of a deprecated one (after a :class:`DeprecationWarning`
        pointing at the caller's line).

    Raises:
        ValueError: ``method`` is none of ``allowed`` (nor a deprecated name of one).
    """
    new = RENAMED.get(method) if isinstance(method, str) else None
    if new is not None and new in allowed:
        warnings.warn(f'forward_dynamics(method="{method}") is deprecated: the acceleration-level '
                      f'divide-and-conquer is method="{new}" ("hdca" names the momentum-level '
                      'Hamiltonian algorithm of simulate(method="hdca"))',
                      DeprecationWarning, stacklevel=3)
        return new
    if method not in allowed:
        raise ValueError(f"method must be {' or '.join(repr(m) for m in allowed)}, "
                         f"got {method!r}")
    return method
