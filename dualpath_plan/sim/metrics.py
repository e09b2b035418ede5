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
* **Use over time**: the cumulative units every resource instance delivered (and the decode tokens made)
  are recorded at the end of the first step or quiet span that reaches each multiple of ``window_s``, at most
  :func:`snapshot_rows` records: when they are full, every other one is dropped and the spacing doubles, so a
  run of any length keeps samples across all of it. Use is piecewise linear in time (each step and span at a
  constant rate), so :meth:`Meter.use_between` interpolates the delivered units between any two times from the
  two records around each (exact when one constant-rate span lies between them, else to within the use of
  one spacing): what the gap's steady-state parts (``sim.gap``) are measured from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from dualpath_plan.bounds.compute import CHUNK_TURNS
from dualpath_plan.model.sums import dot
from dualpath_plan.sim.layout import COMPUTE, KINDS, Layout, route_kind_bytes
from dualpath_plan.sim.stages import N_STAGES, STAGES

WINDOW_S = 3.0  # alpha's horizon (paper A.4, notes 4.2)
PERCENTILES = (50, 90, 99)
SNAPSHOT_BYTES = 32 << 20  # the use-over-time records of one run: at most 32 MB (512 records up to ~8,000 resources)
MAX_SNAPSHOTS = 512  # records of use over time: spacing at most a 256th of the run
MIN_SNAPSHOTS = 4


def record_width(n_res: int) -> int:
    """Floats in one use-over-time record: every resource's use, the decode tokens, and the stage times (per stage
    request-seconds, then token-seconds: ``sim.stages``)."""
    return n_res + 1 + 2 * N_STAGES


def snapshot_rows(n_res: int) -> int:
    """How many use-over-time records a run of ``n_res`` resources keeps: each is a time and
    :func:`record_width` floats, all of them at most :data:`SNAPSHOT_BYTES` (even, from :data:`MIN_SNAPSHOTS` to
    :data:`MAX_SNAPSHOTS`: 512 up to ~8,000 resources, 20 on 8,192 nodes of 8 GPUs, 184,320 resources). With ``r``
    records the spacing is at most ``2/r`` of the run."""
    rows = min(MAX_SNAPSHOTS, SNAPSHOT_BYTES // (8 * (record_width(n_res) + 1)))
    return max(MIN_SNAPSHOTS, rows - rows % 2)


def snapshot(times: np.ndarray, rows: np.ndarray, n: int, t_end: float, used: np.ndarray, decode_tokens: float,
             stage_time: np.ndarray, spacing: float) -> tuple[int, float, float]:
    """Record the cumulative ``used``, ``decode_tokens`` and ``stage_time`` at ``t_end`` as record ``n`` (dropping every
    other record first when all are taken, and doubling ``spacing``); returns (records, spacing, the next time to
    record). The compiled engine's ``loop._snapshot`` is the same arithmetic."""
    if n == times.size:
        half = n // 2
        times[:half], rows[:half] = times[1::2].copy(), rows[1::2].copy()
        n, spacing = half, 2.0 * spacing
    times[n] = t_end
    k = used.size
    rows[n, :k] = used
    rows[n, k] = decode_tokens
    rows[n, k + 1:] = stage_time
    return n + 1, spacing, (np.floor(t_end / spacing) + 1.0) * spacing


@dataclass(frozen=True)
class Latency:
    """Mean and percentiles of one latency over a set of turns, seconds (None when there are none).

    Attributes:
        count: Turns measured.
        mean_s: Mean, seconds.
        p50_s: Median, seconds.
        p90_s: 90th percentile, seconds.
        p99_s: 99th percentile, seconds.
    """

    count: int
    mean_s: float | None
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None

    @classmethod
    def of(cls, values: np.ndarray) -> Latency:
        """Over the finite ``values``."""
        return cls.of_finite(values[np.isfinite(values)])  # a copy of its own, which the percentiles may then reorder

    @classmethod
    def of_finite(cls, values: np.ndarray) -> Latency:
        """Over ``values``, all finite, which this reorders (the caller's to give up)."""
        if not values.size:
            return cls(0, None, None, None, None)
        mean = float(values.mean())  # before the reordering: the same sum as over the records' order
        p = np.percentile(values, PERCENTILES, overwrite_input=True)  # order statistics: the same values, no second copy
        return cls(int(values.size), mean, float(p[0]), float(p[1]), float(p[2]))


@dataclass(frozen=True)
class TurnRecords:
    """Per round (trajectory order): arrival, first token, decode start/end, done (s); DE-read share; with a DRAM tier,
    1 where the tier served its hit (``sim.tier``), else 0 (``None``: no tier)."""

    arrive: np.ndarray
    first: np.ndarray
    dec_start: np.ndarray
    dec_end: np.ndarray
    done: np.ndarray
    de_frac: np.ndarray
    tier: np.ndarray | None = None

    def latencies(self, gen: np.ndarray, mask: np.ndarray) -> tuple[Latency, Latency, Latency]:
        """(TTFT, TTST, TPOT) over the turns in ``mask`` (module docstring). Each is worked out a slice of
        ``CHUNK_TURNS`` turns at a time into one buffer the three share (the finite values of the turns in the mask, in
        turn order), so a run of millions of turns holds one array of them here, not six."""
        every = bool(mask.all())
        buf = np.empty(mask.size if every else int(np.count_nonzero(mask)))

        def finite(per_slice: Callable[[slice], np.ndarray]) -> np.ndarray:
            n = 0
            for i in range(0, mask.size, CHUNK_TURNS):
                s = slice(i, i + CHUNK_TURNS)
                values = per_slice(s) if every else per_slice(s)[mask[s]]
                values = values[np.isfinite(values)]
                buf[n:n + values.size] = values
                n += values.size
            return buf[:n]

        ttft = Latency.of_finite(finite(lambda s: self.first[s] - self.arrive[s]))
        ttst = Latency.of_finite(finite(lambda s: self._second(s, gen)))  # first to second token (module docstring)
        return ttft, ttst, Latency.of_finite(finite(lambda s: self._tpot(s, gen)))

    def _tpot(self, s: slice, gen: np.ndarray) -> np.ndarray:
        """Time per output token of the turns in slice ``s``."""
        tpot = self.dec_end[s] - self.dec_start[s]
        tpot /= np.maximum(gen[s], 1)
        return tpot

    def _second(self, s: slice, gen: np.ndarray) -> np.ndarray:
        """First to second token of the turns in slice ``s``: the second token comes a TPOT after decoding starts."""
        second = self.dec_start[s] + self._tpot(s, gen)
        second -= self.first[s]
        return second


class Meter:
    """Accumulates per-step resource use, decode tokens, per-node SNIC reads in windows, and the time requests
    spend in each stage (``stage_time``: per stage request-seconds, then token-seconds; ``sim.stages``): each step
    adds the engine's per-stage load at the step's end times the step."""

    def __init__(self, layout: Layout, window_s: float = WINDOW_S, own_records: bool = True) -> None:
        """``own_records``: False when the compiled engine keeps the use-over-time records in its arena (and
        ``sim.compiled.run`` points :attr:`snap_times` and :attr:`snaps` at them)."""
        self.layout = layout
        self.used = np.zeros(layout.n_res)
        self.decode_tokens = 0.0
        self.stage_time = np.zeros(2 * N_STAGES)
        self.read_bytes = np.zeros(layout.P + layout.D)
        self.window_s = window_s
        self._window = np.zeros(layout.P + layout.D)
        self._window_end = window_s
        self.windows: list[np.ndarray] = []
        rows = snapshot_rows(layout.n_res) if own_records else 0
        self.snap_times, self.snaps = np.zeros(rows), np.zeros((rows, record_width(layout.n_res)))
        self.n_snaps, self._snap_spacing, self._snap_next = 0, window_s, window_s

    def step(self, t_end: float, dt: float, used: np.ndarray, read_x: np.ndarray, decode_tokens: float, stage_load: list) -> None:
        """One step of ``dt`` ending at ``t_end``: add its resource use, SNIC reads per node, decode tokens and
        stage times."""
        self.used += used
        self.read_bytes += read_x
        self.decode_tokens += decode_tokens
        self.stage_time += np.asarray(stage_load) * dt
        self._window += read_x
        if t_end >= self._window_end:
            self._close(t_end)
        self._snapshot(t_end)

    def _snapshot(self, t_end: float) -> None:
        if t_end >= self._snap_next:
            self.n_snaps, self._snap_spacing, self._snap_next = snapshot(self.snap_times, self.snaps, self.n_snaps, t_end, self.used,
                                                                          self.decode_tokens, self.stage_time, self._snap_spacing)

    def use_between(self, a: float, b: float, end: float) -> tuple[np.ndarray, float]:
        """Units each resource instance delivered, and decode tokens made, between times ``a <= b`` of a run that
        ended at ``end`` (module docstring: interpolated between the use-over-time records)."""
        delta = self._at(b, end) - self._at(a, end)
        k = self.used.size
        return delta[:k], float(delta[k])

    def stages_between(self, a: float, b: float, end: float) -> np.ndarray:
        """Request-seconds, then token-seconds, spent in each stage between times ``a <= b`` (as :meth:`use_between`)."""
        return (self._at(b, end) - self._at(a, end))[self.used.size + 1:]

    def _at(self, t: float, end: float) -> np.ndarray:
        """Cumulative use, decode tokens and stage times (:meth:`totals`) at ``t``, between the two records around it: t = 0 (nothing used)
        before the first and the run's totals at ``end`` after the last."""
        n = self.n_snaps
        times = self.snap_times[:n]
        i = int(np.searchsorted(times, t, side="right"))  # records before t: times[:i]
        t0, row0 = (times[i - 1], self.snaps[i - 1]) if i > 0 else (0.0, np.zeros(self.snaps.shape[1]))
        t1, row1 = (times[i], self.snaps[i]) if i < n else (end, self.totals())
        w = min(max((t - t0) / (t1 - t0), 0.0), 1.0) if t1 > t0 else 1.0
        return row0 + w * (row1 - row0)

    def totals(self) -> np.ndarray:
        """The run's cumulative record now: every resource's use, the decode tokens, the stage times."""
        return np.concatenate((self.used, [self.decode_tokens], self.stage_time))

    def records_until(self, end: float) -> tuple[np.ndarray, np.ndarray]:
        """The record times before ``end`` and then ``end``, and the records there (the last: :meth:`totals`)."""
        n = self.n_snaps
        before = self.snap_times[:n] < end  # a record at the run's last step is the end itself
        return np.append(self.snap_times[:n][before], end), np.vstack((self.snaps[:n][before], self.totals()[None, :]))

    def span(self, t_start: float, duration: float, used: np.ndarray, read_x: np.ndarray, decode_tokens: float, steps: int,
             stage_load: list) -> None:
        """``steps`` identical steps from ``t_start``: reads are spread evenly over the windows they cross."""
        self.used += steps * used
        self.read_bytes += steps * read_x
        self.decode_tokens += steps * decode_tokens
        self.stage_time += np.asarray(stage_load) * duration
        t, t_end, rate = t_start, t_start + duration, read_x * steps / duration
        idle = not np.count_nonzero(rate)  # then the windows it crosses stay empty: pass them in one go
        while t_end >= self._window_end:
            self._window += rate * max(self._window_end - t, 0.0)
            t = self._window_end
            self._close(t_end if idle else self._window_end)
        self._window += rate * (t_end - t)
        self._snapshot(t_end)

    def _close(self, t_end: float) -> None:
        if np.count_nonzero(self._window):  # a window without reads has no balance to report
            self.windows.append(self._window)
        self._window = np.zeros_like(self._window)
        self._window_end += self.window_s * max(1.0, np.ceil((t_end - self._window_end) / self.window_s + 1e-12))

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


@dataclass(frozen=True)
class Use:
    """What one resource kind delivered over a time window: units, its capacity over the window (all instances
    together), and the busiest instance's delivered share of its own capacity."""

    delivered: float
    capacity: float
    busiest_frac: float

    @property
    def frac(self) -> float:
        return self.delivered / self.capacity if self.capacity > 0 else 0.0


@dataclass(frozen=True)
class UseCurve:
    """A run's use over time per resource kind: the cumulative units each kind delivered (all its instances), and
    the decode tokens made (``decode``), at every use-over-time record and at the run's end; ``capacity`` is each
    kind's units per second (decode: the decode GPUs at the LP's rate). Between two times the delivered share of
    capacity is the difference of two rows over ``capacity`` times the interval."""

    times: np.ndarray  # (n,) s, rising; the last is the run's end
    kinds: tuple[str, ...]  # KINDS, then "decode"
    cumulative: np.ndarray  # (n, len(kinds))
    capacity: np.ndarray  # (len(kinds),)

    def utilization(self, span_s: float) -> dict[str, float]:
        """Share of capacity used over ``span_s`` per resource kind, plus ``decode``: all the run delivered."""
        caps = self.capacity * span_s
        return {kind: float(self.cumulative[-1, k]) / float(caps[k]) if caps[k] > 0 else 0.0 for k, kind in enumerate(self.kinds)}


def use_curve(meter: Meter, end: float, decode_tokens_per_gpu_s: float) -> UseCurve:
    """The run's :class:`UseCurve` from its meter's records, per kind."""
    L = meter.layout
    times, rows = meter.records_until(end)
    rows = rows[:, :L.n_res + 1]
    per_kind = np.column_stack([rows[:, L.slice(kind)].sum(axis=1) for kind in KINDS] + [rows[:, -1]])
    capacity = np.array([float(L.capacity[L.slice(kind)].sum()) for kind in KINDS] + [L.n_de * decode_tokens_per_gpu_s])
    return UseCurve(times, (*KINDS, "decode"), per_kind, capacity)


def window_use(meter: Meter, a: float, b: float, end: float, decode_tokens_per_gpu_s: float) -> dict[str, Use]:
    """Per resource kind, and ``decode`` (decode tokens over what the decode GPUs make at the LP's rate, no
    instances), what the run delivered between ``a`` and ``b`` (``Meter.use_between``)."""
    L, span = meter.layout, max(b - a, 0.0)
    units, tokens = meter.use_between(a, b, end)
    out = {}
    for kind in KINDS:
        cut = L.slice(kind)
        cap = L.capacity[cut] * span
        shares = np.divide(units[cut], cap, out=np.zeros_like(cap), where=cap > 0)
        out[kind] = Use(float(units[cut].sum()), float(cap.sum()), float(shares.max()) if shares.size else 0.0)
    cap = L.n_de * decode_tokens_per_gpu_s * span
    out["decode"] = Use(tokens, cap, tokens / cap if cap > 0 else 0.0)
    return out


def demanded(hit: np.ndarray, miss: np.ndarray, gen: np.ndarray, de_frac: np.ndarray, kv_hit: float, kv_miss: float,
             kv_wb: float, layerwise: bool, flops: float, tier: np.ndarray | None = None, sigma: float = 0.0) -> dict[str, float]:
    """Units per resource kind the given completed turns need along their routes; their prefill compute is
    ``flops``, what their forward batches charged them (each pass's time at peak FLOP/s, shared by tokens). With a
    DRAM tier, ``tier`` says per turn whether its hit came from the pool (``sim.tier``; its ``de_frac`` is then 0) and
    ``sigma`` is the pool's share on prefill nodes."""
    # Each route's total from whole-run sums and one dot product, read in slices: no array of a run's every turn is
    # made (on 48P96D those are 62 MB each, and the peak of a run's memory came here).
    hit_s, de_s = kv_hit * float(hit.sum()), kv_hit * dot(hit, de_frac)
    tier_s = 0.0 if tier is None else kv_hit * dot(hit, tier)
    miss_s = kv_miss * float(miss.sum())
    back = kv_wb * float(miss.sum() + gen.sum())
    totals = {
        "read_pe": hit_s - tier_s - de_s,
        "read_de": de_s,
        "stream_pe": hit_s - tier_s - de_s,
        "stream_de": de_s if layerwise else 0.0,
        "kv_out": (hit_s - de_s if layerwise else hit_s) + miss_s,
        "h2d": hit_s + miss_s,
        "writeback": back,
    }
    if tier is not None:
        totals.update({"tier_read": tier_s, "insert_pe": hit_s - tier_s - de_s, "insert_de": de_s, "insert_wb": back})
    out = {kind: 0.0 for kind in KINDS}
    for route, total in totals.items():
        for kind, count in route_kind_bytes(route, sigma).items():
            out[kind] += count * total
    out[COMPUTE] = flops
    return out


@dataclass(frozen=True)
class StageLoad:
    """Where turns were over a time window: the mean requests and prompt tokens in one stage (``sim.stages``), and
    by Little's law the mean seconds a finished turn spent there (``seconds_per_turn``: mean requests over the turns
    finished per second in the window; None with none finished)."""

    requests: float
    tokens: float
    seconds_per_turn: float | None


@dataclass(frozen=True)
class StageCurve:
    """A run's stage times over time: per stage the cumulative request-seconds (``requests``) and token-seconds
    (``tokens``) at every use-over-time record and at the run's end (``times``, as :class:`UseCurve`). Between two
    times, a difference of two rows over the interval is the mean occupancy of each stage."""

    times: np.ndarray  # (n,) s, rising; the last is the run's end
    stages: tuple[str, ...]  # sim.stages.STAGES
    requests: np.ndarray  # (n, len(stages)) request-seconds
    tokens: np.ndarray  # (n, len(stages)) token-seconds


def stage_curve(meter: Meter, end: float) -> StageCurve:
    """The run's :class:`StageCurve` from its meter's records."""
    times, rows = meter.records_until(end)
    rows = rows[:, meter.used.size + 1:]
    return StageCurve(times, STAGES, rows[:, :N_STAGES], rows[:, N_STAGES:])


def window_stages(meter: Meter, a: float, b: float, end: float, turns_per_s: float | None) -> dict[str, StageLoad]:
    """Per stage, its mean occupancy between ``a`` and ``b`` (``Meter.stages_between``) and the seconds per turn it
    stands for at ``turns_per_s``."""
    span = b - a
    if not span > 0:
        return {}
    seconds = meter.stages_between(a, b, end) / span
    rate = turns_per_s if turns_per_s else None
    return {name: StageLoad(float(seconds[s]), float(seconds[N_STAGES + s]), None if rate is None else float(seconds[s]) / rate)
            for s, name in enumerate(STAGES)}


def window_snic_balance(meter: Meter, a: float, b: float, end: float) -> float | None:
    """The storage NICs' balance between ``a`` and ``b``: per interval between the use-over-time records inside the
    window, the busiest node's reads over the mean node's, averaged over the intervals with reads (None: none). The
    run-wide ``Meter.snic_max_over_avg`` averages 3 s windows over the whole run, ramp-up and tail included; this
    one measures a steady window at the records' spacing (at most a 256th of the run)."""
    L, times = meter.layout, meter.snap_times[:meter.n_snaps]
    cuts = np.concatenate(([a], times[(times > a) & (times < b)], [b]))
    nodes = np.concatenate((np.arange(L.P) + L.start["pe_snic"], np.arange(L.D) + L.start["de_snic"]))
    rows = np.array([meter._at(t, end)[nodes] for t in cuts])
    reads = np.diff(rows, axis=0)
    means = reads.mean(axis=1)
    ratios = reads.max(axis=1)[means > 0] / means[means > 0]
    return float(ratios.mean()) if ratios.size else None
