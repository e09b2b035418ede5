"""The pipes of a cluster, as both engines lay them out: which FIFO pipes exist, in which order, and the
resources each one crosses (its route, ``sim.layout.ROUTES``).

Pipes ``0 .. P+D-1`` read from storage (one per node: PE path 1-2, DE path 1-2); then one whole-KV load per
prefill engine (PE path 3-4, used without layer-wise prefill); then one H2D (PE 8-9 / DE 6-7) and one
write-back per decode engine; with a DRAM tier (``--dram-tier``), then one tier load per prefill engine (the pool ->
PE HBM whole-KV load of a tier hit without layer-wise prefill, and the route a layer-wise batch's tier stream takes),
and the reads and write-backs also copy their bytes into the pool (``layout.TIER_ROUTES``). The Python engine's ``sim.python.state.Pipes`` and the compiled engine's
arenas (``sim.compiled.run``) are both built from :class:`PipeLayout`, so the two cannot lay them out apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.sim.layout import Layout

READ_PE, READ_DE, LOAD, H2D, WB = range(5)  # item tags
# An engine's answer when it asks for an item's room (Engine._take_room): taken; not now (an older request waits
# for the DE buffer, which an admission may serve); not before the admission passes end (a full read window,
# buffer or HBM, which only fill further while they run: nothing is queued, served or freed then).
TAKEN, NOT_NOW, NOT_THIS_ROUND = 1, 0, -1


@dataclass(frozen=True, eq=False)
class PipeLayout:
    """First pipe of each kind (``read0``, ``load0``, ``h2d0``, ``wb0``, ``tier0``: ``n`` without a tier), the pipe count
    ``n``, and the incidence of every pipe: ``lengths[i]`` hops, at resources ``res`` with ``coef`` bytes per byte."""

    read0: int
    load0: int
    h2d0: int
    wb0: int
    n: int
    lengths: np.ndarray
    res: np.ndarray
    coef: np.ndarray
    tier0: int = 0

    @classmethod
    def of(cls, layout: Layout) -> PipeLayout:
        load0 = layout.P + layout.D
        h2d0 = load0 + layout.n_pe
        wb0 = h2d0 + layout.n_de
        tier0 = wb0 + layout.n_de
        tier = layout.tier
        P, D, n_pe, n_de = layout.P, layout.D, layout.n_pe, layout.n_de
        routes: list[tuple[tuple[str, ...], int, int, int, int]] = []  # (routes, pe, de, pool source, sources of its kind) per pipe
        routes += [(("read_pe", "insert_pe") if tier else ("read_pe",), n * layout.g_pe, 0, n, P) for n in range(P)]
        routes += [(("read_de", "insert_de") if tier else ("read_de",), 0, n * layout.g_de, n, D) for n in range(D)]
        routes += [(("stream_pe",), e, 0, 0, 1) for e in range(n_pe)]
        routes += [(("h2d",), 0, e, 0, 1) for e in range(n_de)]
        routes += [(("writeback", "insert_wb") if tier else ("writeback",), 0, e, e, n_de) for e in range(n_de)]
        routes += [(("tier_read",), e, 0, e, n_pe) for e in range(n_pe)] if tier else []
        lengths, res, coef = [], [], []
        for names, pe, de, source, sources in routes:
            hops: dict[int, float] = {}  # a resource crossed twice (a read's buffer, then its copy out of it) is one entry
            for name in names:
                for r, c in layout.hops(name, pe, de, source, sources):
                    hops[r] = hops.get(r, 0.0) + c
            lengths.append(len(hops))
            res += list(hops)
            coef += list(hops.values())
        n = tier0 + (layout.n_pe if tier else 0)
        return cls(0, load0, h2d0, wb0, n, np.array(lengths), np.array(res, dtype=np.int64), np.array(coef), tier0 if tier else n)
