"""The DRAM tier's LRU for the Python engine (``sim.tier`` describes the model)."""

from __future__ import annotations

from collections import OrderedDict

from dualpath_plan.sim.tier import FIT


class Lru:
    """The tier's objects in use order (least recent first), their bytes, and the tier's bytes."""

    def __init__(self, capacity_bytes: float) -> None:
        self.capacity, self.used = capacity_bytes, 0.0
        self.objects: OrderedDict[int, float] = OrderedDict()

    def ask(self, agent: int, hit_bytes: float) -> bool:
        """Whether the tier serves ``hit_bytes`` of ``agent``'s KV; on a miss the object is (re)made of the bytes
        about to be read from storage. Either way it becomes the most recent."""
        size = self.objects.get(agent)
        if size is not None and size * FIT >= hit_bytes:
            self.objects.move_to_end(agent)
            return True
        self.put(agent, hit_bytes)
        return False

    def written(self, agent: int, context_bytes: float, new_bytes: float) -> None:
        """A write-back of ``new_bytes`` ended: the object holds ``context_bytes`` if it was still there, else the new
        bytes alone (module docstring)."""
        self.put(agent, context_bytes if agent in self.objects else new_bytes)

    def put(self, agent: int, size: float) -> None:
        """``agent``'s object now holds ``size`` bytes and is the most recent; the least recent go while over capacity."""
        old = self.objects.pop(agent, None)
        if old is not None:
            self.used -= old
        self.objects[agent] = size
        self.used += size
        while self.used > self.capacity and self.objects:
            _, gone = self.objects.popitem(last=False)
            self.used -= gone
        if not self.objects:
            self.used = 0.0  # no rounding drift in an empty tier
