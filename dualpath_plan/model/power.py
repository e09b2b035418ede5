"""Power and energy: what a cluster draws at full load and what a turn and an output token cost in joules.

A node draws at most its profile's ``node_power_W`` (the vendor's maximum for the whole system at full load:
GPUs, CPUs, NICs, fans), a storage node its storage profile's. A cluster of ``P`` prefill nodes, ``D`` decode nodes
and ``N_s`` storage nodes draws at most ``P*W_pe + D*W_de + N_s*W_s``; at a throughput of ``X`` turns/s that is
``W/X`` joules per turn and ``W/(X*gen)`` per output token, an upper bound on the energy (a node at its bound runs
its binding resource flat out, rarely every GPU at its peak). A profile without ``node_power_W`` makes the cluster's
power unknown (``None``), never zero.

``--electricity-usd-per-kwh`` prices that power by the hour (:func:`energy_usd_per_hour`): added to a node's rent, it
makes a rented cluster's USD per million turns cover compute, storage and power (for rents that do not already
include power, as a cloud's on-demand rents do).
"""

from __future__ import annotations

from dataclasses import dataclass

from dualpath_plan.model.profiles import Hardware, Storage

W_PER_KW = 1e3


@dataclass(frozen=True)
class Energy:
    """A cluster's power at full load and its energy per turn and per output token at a throughput.

    Attributes:
        power_W: The most the cluster draws, W (``None``: a profile gives no ``node_power_W``).
        joules_per_turn: ``power / X``, J per turn (``None``: power unknown or nothing served).
        joules_per_output_token: ``power / (X * gen)``, J per generated token (``None`` alike).
        unknown: The profiles without ``node_power_W``, by name.
    """

    power_W: float | None
    joules_per_turn: float | None
    joules_per_output_token: float | None
    unknown: tuple[str, ...] = ()

    @property
    def power_kw(self) -> float | None:
        return None if self.power_W is None else self.power_W / W_PER_KW


def cluster_power_W(pe: Hardware, de: Hardware, P: int, D: int, storage: Storage | None = None, storage_nodes: int = 0) -> tuple[float | None, tuple[str, ...]]:
    """``(P*W_pe + D*W_de + N_s*W_s, profiles without power)``; the power is ``None`` when any part is unknown."""
    parts = [(pe, P), (de, D)] + ([(storage, storage_nodes)] if storage is not None and storage_nodes > 0 else [])
    unknown = tuple(dict.fromkeys(profile.name for profile, count in parts if count > 0 and profile.node_power_W is None))
    if unknown:
        return None, unknown
    return float(sum(profile.node_power_W * count for profile, count in parts)), ()


def energy(power_W: float | None, unknown: tuple[str, ...], turns_per_s: float, gen_tokens_per_turn: float) -> Energy:
    """The :class:`Energy` of a cluster drawing ``power_W`` at ``turns_per_s`` turns/s of ``gen_tokens_per_turn``."""
    if power_W is None or not turns_per_s > 0:
        return Energy(power_W, None, None, unknown)
    per_turn = power_W / turns_per_s
    return Energy(power_W, per_turn, per_turn / gen_tokens_per_turn if gen_tokens_per_turn > 0 else None, unknown)


def energy_usd_per_hour(power_W: float, usd_per_kwh: float) -> float:
    """What ``power_W`` drawn for an hour costs at ``usd_per_kwh``, USD/h."""
    return power_W / W_PER_KW * usd_per_kwh
