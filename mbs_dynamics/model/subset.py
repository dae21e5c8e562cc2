"""What a robot in a subset of its coordinates (mimic joints' independent coordinates, a closed
loop's actuated joints) reports of its full tree: the joints' limits picked by ``_sel``, and the
rest as the full robot (``_full``) has it."""
from __future__ import annotations


class SubsetDescription:
    """Mixin: ``lower``, ``upper``, ``velocity_limit``, ``effort_limit`` of the kept joints
    (``self._sel(full array)``), ``gravity``, ``base_link``, ``total_mass`` of ``self._full``."""

    __slots__ = ()

    @property
    def lower(self):
        return self._sel(self._full.lower)

    @property
    def upper(self):
        return self._sel(self._full.upper)

    @property
    def velocity_limit(self):
        return self._sel(self._full.velocity_limit)

    @property
    def effort_limit(self):
        return self._sel(self._full.effort_limit)

    @property
    def gravity(self):
        return self._full.gravity

    @property
    def base_link(self):
        return self._full.base_link

    @property
    def total_mass(self) -> float:
        return self._full.total_mass
