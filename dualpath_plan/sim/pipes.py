"""The pipes of a cluster, as both engines lay them out: which FIFO pipes exist, in which order, and the
resources each one crosses (its route, ``sim.layout.ROUTES``).

Pipes ``0 .. P+D-1`` read from storage (one per node: PE path 1-2, DE path 1-2); then one whole-KV load per
prefill engine (PE path 3-4, used without layer-wise prefill); then one H2D (PE 8-9 / DE 6-7) and one
write-back per decode engine. The Python engine's ``sim.python.state.Pipes`` and the compiled engine's
arenas (``sim.compiled.run``) are both built from :class:`PipeLayout`, so the two cannot lay them out apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.sim.layout import ROUTES, Layout

READ_PE, READ_DE, LOAD, H2D, WB = range(5)  # item tags


@dataclass(frozen=True, eq=False)
class PipeLayout:
    """First pipe of each kind (``read0``, ``load0``, ``h2d0``, ``wb0``), the pipe count ``n``, and the
    incidence of every pipe: ``lengths[i]`` hops, at resources ``res`` with ``coef`` bytes per byte."""

    read0: int
    load0: int
    h2d0: int
    wb0: int
    n: int
    lengths: np.ndarray
    res: np.ndarray
    coef: np.ndarray

    @classmethod
    def of(cls, layout: Layout) -> PipeLayout:
        load0 = layout.P + layout.D
        h2d0 = load0 + layout.n_pe
        wb0 = h2d0 + layout.n_de
        routes: list[tuple[str, int, int]] = []  # (route, pe, de) per pipe
        routes += [("read_pe", n * layout.g_pe, 0) for n in range(layout.P)]
        routes += [("read_de", 0, n * layout.g_de) for n in range(layout.D)]
        routes += [("stream_pe", e, 0) for e in range(layout.n_pe)]
        routes += [("h2d", 0, e) for e in range(layout.n_de)]
        routes += [("writeback", 0, e) for e in range(layout.n_de)]
        lengths, res, coef = [], [], []
        for route, pe, de in routes:
            hops = ROUTES[route]
            lengths.append(len(hops))
            res += [layout.locate(kind, where, pe, de) for kind, where, _ in hops]
            coef += [float(count) for _, _, count in hops]
        return cls(0, load0, h2d0, wb0, wb0 + layout.n_de, np.array(lengths), np.array(res, dtype=np.int64), np.array(coef))
