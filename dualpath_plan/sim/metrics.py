"""What a fluid run measures: resource use per step, SNIC balance over time windows, turn latencies.

* **Utilisation** of a resource kind: units it delivered over the run divided by its capacity times
  the run's length (all instances of the kind together). Decode utilisation is decode tokens made
  over what the decode GPUs make at the LP's decode rate (``decode`` module), the LP's own measure.
* **SNIC balance**: the bytes each node's SNIC reads are summed in windows of ``window_s``; for each
  window with traffic, max over nodes divided by the mean over all P+D nodes (1 = perfectly even;
  P+D = one node reads everything). The result is the mean over windows. The default window is the
  scheduler's own horizon, alpha's 3 s (paper A.4, notes 4.2): the imbalance the scheduler is meant to remove.
* **Latency** of a turn (paper §7 online, notes 6.3): TTFT = first token (end of its prefill) - arrival; TPOT = decode
  time / generated tokens (every token a decode step); TTST = second token - first token: the hand-over to
  decode (KV transfer, the wait for decode HBM, the H2D) plus one step = decode start + TPOT - first token.
  The paper reports TTST values below its TTFT values, which only this reading allows (from arrival,
  TTST would exceed TTFT).
* **Delivered and demanded** units per resource kind: what the sharing rule actually granted, and
  what the completed turns' routes (``sim.layout.ROUTES``) say they need; they must agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualpath_plan.sim.layout import COMPUTE, KINDS, ROUTES, Layout

WINDOW_S = 3.0  # alpha's horizon (paper A.4, notes 4.2)
PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Latency:
    """Mean and percentiles of one latency over a set of turns, seconds (None when there are none)."""

    count: int
    mean_s: float | None
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None

    @classmethod
    def of(cls, values: np.ndarray) -> Latency:
        values = values[np.isfinite(values)]
        if not values.size:
            return cls(0, None, None, None, None)
        p = np.percentile(values, PERCENTILES)
        return cls(int(values.size), float(values.mean()), float(p[0]), float(p[1]), float(p[2]))


@dataclass(frozen=True)
class TurnRecords:
    """Per round (trajectory order): arrival, first token, decode start/end, done (s); DE-read share."""

    arrive: np.ndarray
    first: np.ndarray
    dec_start: np.ndarray
    dec_end: np.ndarray
    done: np.ndarray
    de_frac: np.ndarray

    def latencies(self, gen: np.ndarray, mask: np.ndarray) -> tuple[Latency, Latency, Latency]:
        """(TTFT, TTST, TPOT) over the turns in ``mask`` (module docstring)."""
        pick = (lambda a: a) if mask.all() else (lambda a: a[mask])  # noqa: E731 (one array at a time, no copies)
        ttft = Latency.of(pick(self.first - self.arrive))
        tpot = (self.dec_end - self.dec_start) / np.maximum(gen, 1)
        ttst = Latency.of(pick(self.dec_start + tpot - self.first))  # first to second token (module docstring)
        return ttft, ttst, Latency.of(pick(tpot))


class Meter:
    """Accumulates per-step resource use, decode tokens and per-node SNIC reads in windows."""

    def __init__(self, layout: Layout, window_s: float = WINDOW_S) -> None:
        self.layout = layout
        self.used = np.zeros(layout.n_res)
        self.decode_tokens = 0.0
        self.read_bytes = np.zeros(layout.P + layout.D)
        self.window_s = window_s
        self._window = np.zeros(layout.P + layout.D)
        self._window_end = window_s
        self.windows: list[np.ndarray] = []

    def step(self, t_end: float, used: np.ndarray, read_x: np.ndarray, decode_tokens: float) -> None:
        """One step ending at ``t_end``: add its resource use, SNIC reads per node and decode tokens."""
        self.used += used
        self.read_bytes += read_x
        self.decode_tokens += decode_tokens
        self._window += read_x
        if t_end >= self._window_end:
            self._close(t_end)

    def span(self, t_start: float, duration: float, used: np.ndarray, read_x: np.ndarray, decode_tokens: float, steps: int) -> None:
        """``steps`` identical steps from ``t_start``: reads are spread evenly over the windows they cross."""
        self.used += steps * used
        self.read_bytes += steps * read_x
        self.decode_tokens += steps * decode_tokens
        t, t_end, rate = t_start, t_start + duration, read_x * steps / duration
        idle = not np.count_nonzero(rate)  # then the windows it crosses stay empty: pass them in one go
        while t_end >= self._window_end:
            self._window += rate * max(self._window_end - t, 0.0)
            t = self._window_end
            self._close(t_end if idle else self._window_end)
        self._window += rate * (t_end - t)

    def _close(self, t_end: float) -> None:
        if np.count_nonzero(self._window):  # a window without reads has no balance to report
            self.windows.append(self._window)
        self._window = np.zeros_like(self._window)
        self._window_end += self.window_s * max(1.0, np.ceil((t_end - self._window_end) / self.window_s + 1e-12))

    def utilization(self, span_s: float, decode_tokens_per_gpu_s: float) -> dict[str, float]:
        """Share of capacity used over ``span_s`` per resource kind, plus ``decode``."""
        L, out = self.layout, {}
        for kind in KINDS:
            cap = float(L.capacity[L.slice(kind)].sum()) * span_s
            out[kind] = float(self.used[L.slice(kind)].sum()) / cap if cap > 0 else 0.0
        cap = L.n_de * decode_tokens_per_gpu_s * span_s
        out["decode"] = self.decode_tokens / cap if cap > 0 else 0.0
        return out

    def snic_max_over_avg(self) -> float | None:
        """Mean over windows with traffic of (max node SNIC reads / mean over all nodes); None with no reads."""
        windows = [*self.windows, self._window]
        ratios = [w.max() / w.mean() for w in windows if w.sum() > 0]
        return float(np.mean(ratios)) if ratios else None

    def de_read_share(self) -> float:
        total = float(self.read_bytes.sum())
        return float(self.read_bytes[self.layout.P:].sum()) / total if total > 0 else 0.0

    def delivered(self) -> dict[str, float]:
        return {kind: float(self.used[self.layout.slice(kind)].sum()) for kind in KINDS}


def demanded(hit: np.ndarray, miss: np.ndarray, gen: np.ndarray, de_frac: np.ndarray, kv_hit: float, kv_miss: float,
             kv_wb: float, layerwise: bool, flops: float) -> dict[str, float]:
    """Units per resource kind the given completed turns need along their routes; their prefill compute is
    ``flops``, what their forward batches charged them (each pass's time at peak FLOP/s, shared by tokens)."""
    H, Mi = hit * kv_hit, miss * kv_miss
    amounts = {  # each made when its route is summed, so that no more than one exists beside H and Mi
        "read_pe": lambda: H * (1 - de_frac),
        "read_de": lambda: H * de_frac,
        "stream_pe": lambda: H * (1 - de_frac),
        "stream_de": lambda: H * de_frac if layerwise else 0.0 * H,
        "kv_out": lambda: (H * (1 - de_frac) if layerwise else H) + Mi,
        "h2d": lambda: H + Mi,
        "writeback": lambda: (miss + gen) * kv_wb,
    }
    out = {kind: 0.0 for kind in KINDS}
    for route, amount in amounts.items():
        total = float(np.sum(amount()))  # once per route, whatever its hops
        for kind, _where, count in ROUTES[route]:
            out[kind] += count * total
    out[COMPUTE] = flops
    return out
