"""``simulate --timeseries F.csv`` and ``--turns F.csv``: a run over time, and every turn's times, as CSV files.

**Time series**, one row per policy and window. The windows are the spans between the run's use-over-time
records (``sim.metrics``: at the end of the first step or quiet span that reaches each multiple of 3 s, so a
span the engine jumps in one go is one window; twice as long each time the 512 records fill), so a run of any
length gives a file of a few hundred rows. Per window:

* ``turns_per_s``: turns that finished in the window over its length;
* ``<kind>_utilization_frac``: what each resource kind delivered over its capacity times the window, and
  ``decode_utilization_frac`` the decode tokens made over what the decode GPUs make at the LP's rate (the
  run-wide utilisation table's measures, window by window; a hair above 1 where the engine spends capacity a step
  left unused);
* at the window's end: ``running_agents`` (agents past their first arrival and before their last turn's end),
  ``waiting_turns`` (turns arrived and not yet at their first token: queued, reading or prefilling) and
  ``decoding_turns`` (between decode start and end);
* ``ttft_p50_s``, ``ttft_p99_s``: the TTFT of the turns whose first token came in the window (empty without one);
* ``<stage>_requests`` and ``<stage>_tokens``: the mean requests and prompt tokens in each stage a turn passes
  through over the window (``sim.stages``: waiting for a PE or a DE, in a read queue, waiting for buffer room,
  reading, ..., writing back), from the stage meters; over all stages they add up to the agents in flight.

**Turns**, one row per policy and turn in trajectory order: the agent, its round, the tokens it loads (hit),
prefills (append) and generates, the arrival, first token, decode start, decode end and completion times (empty
for a time the run never reached) and the share of its hit KV read through the decode side (empty for a turn that
never arrived). Times are the engine's, at its step's resolution (``--dt-ms``, 50 ms): a turn's completion is
recorded at the end of the step its write-back finished in and its decode end inside the step, so two times a turn
passes in one step may appear up to one step out of order.

Times in seconds, every number in SI; both files are written under a temporary name and renamed
(``report.files``), after the run, and only for the first seed's runs of ``--seeds``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from dualpath_plan.model.workload import Trajectories
from dualpath_plan.report.files import write_atomic
from dualpath_plan.sim.runner import SimResult

TURN_FIELDS = ("policy", "agent", "round", "hit_tokens", "append_tokens", "gen_tokens", "arrive_s", "first_token_s", "decode_start_s",
               "decode_end_s", "done_s", "de_read_frac")


def timeseries_fields(run: SimResult) -> tuple[str, ...]:
    kinds = tuple(f"{kind}_utilization_frac" for kind in run.use_over_time.kinds)
    stages = tuple(f"{stage}_{unit}" for unit in ("requests", "tokens") for stage in run.stages_over_time.stages)
    return ("policy", "start_s", "end_s", "turns_per_s", *kinds, "running_agents", "waiting_turns", "decoding_turns", "ttft_p50_s",
            "ttft_p99_s", *stages)


def timeseries_rows(name: str, run: SimResult, traj: Trajectories) -> list[dict]:
    """The windows of one run (module docstring)."""
    curve, rec = run.use_over_time, run.records
    ends = curve.times
    starts = np.concatenate(([0.0], ends[:-1]))
    span = ends - starts
    use = np.diff(np.vstack((np.zeros(len(curve.kinds)), curve.cumulative)), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(curve.capacity > 0, use / (curve.capacity * span[:, None]), 0.0)
    done = _count(rec.done, ends) - _count(rec.done, starts)
    agents = _count(rec.arrive[traj.offsets[:-1]], ends) - _count(rec.done[traj.offsets[1:] - 1], ends)
    waiting = _count(rec.arrive, ends) - _count(rec.first, ends)
    decoding = _count(rec.dec_start, ends) - _count(rec.dec_end, ends)
    p50, p99 = _ttft_percentiles(rec.first, rec.arrive, starts, ends)
    stages = run.stages_over_time  # recorded at the same times as the use
    with np.errstate(divide="ignore", invalid="ignore"):
        occupancy = {unit: np.diff(np.vstack((np.zeros(len(stages.stages)), getattr(stages, unit))), axis=0) / span[:, None]
                     for unit in ("requests", "tokens")}
    rows = []
    for j in range(ends.size):
        row = {"policy": name, "start_s": starts[j], "end_s": ends[j], "turns_per_s": done[j] / span[j] if span[j] > 0 else 0.0}
        row |= {f"{kind}_utilization_frac": float(frac[j, k]) for k, kind in enumerate(curve.kinds)}
        row |= {"running_agents": int(agents[j]), "waiting_turns": int(waiting[j]), "decoding_turns": int(decoding[j]),
                "ttft_p50_s": p50[j], "ttft_p99_s": p99[j]}
        row |= {f"{stage}_{unit}": float(occupancy[unit][j, k]) if span[j] > 0 else 0.0
                for unit in ("requests", "tokens") for k, stage in enumerate(stages.stages)}
        rows.append(row)
    return rows


def _count(times: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How many of ``times`` are at or before each of ``at`` (NaN, a time not reached, never is)."""
    reached = np.sort(times[np.isfinite(times)])
    return np.searchsorted(reached, at, side="right")


def _ttft_percentiles(first: np.ndarray, arrive: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[list, list]:
    """Per window, the 50th and 99th percentile TTFT of the turns whose first token came in it (None: no turn)."""
    seen = np.isfinite(first)
    window = np.searchsorted(ends, first[seen], side="left")  # first in (starts[j], ends[j]] -> j
    ttft = (first - arrive)[seen]
    order = np.argsort(window, kind="stable")
    groups = np.split(ttft[order], np.searchsorted(window[order], np.arange(1, ends.size)))
    p50 = [float(np.percentile(g, 50)) if g.size else None for g in groups]
    p99 = [float(np.percentile(g, 99)) if g.size else None for g in groups]
    return p50, p99


def turn_columns(run: SimResult, traj: Trajectories) -> dict[str, list]:
    """Every turn of one run as columns (module docstring; ``None`` for a time the run never reached)."""
    rec = run.records
    agent = np.repeat(np.arange(traj.n_agents), np.diff(traj.offsets))
    rounds = np.arange(traj.n_rounds) - traj.offsets[:-1][agent]
    shown = lambda a: [None if v != v else v for v in a.tolist()]  # noqa: E731  (NaN, not reached: an empty cell)
    return {"agent": agent.tolist(), "round": rounds.tolist(), "hit_tokens": traj.context_tokens.tolist(),
            "append_tokens": traj.append_tokens.tolist(), "gen_tokens": traj.gen_tokens.tolist(), "arrive_s": shown(rec.arrive),
            "first_token_s": shown(rec.first), "decode_start_s": shown(rec.dec_start), "decode_end_s": shown(rec.dec_end),
            "done_s": shown(rec.done), "de_read_frac": [None if a != a else f for a, f in zip(rec.arrive.tolist(), rec.de_frac.tolist())]}


def write_timeseries(runs: dict[str, SimResult], traj: Trajectories, path: Path, flag: str = "--timeseries") -> None:
    fields = timeseries_fields(next(iter(runs.values())))
    rows = [row for name, run in runs.items() for row in timeseries_rows(name, run, traj)]

    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)

    write_atomic(path, write, flag)


def write_turns(runs: dict[str, SimResult], traj: Trajectories, path: Path, flag: str = "--turns") -> None:
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(TURN_FIELDS)
            for name, run in runs.items():
                columns = turn_columns(run, traj)
                writer.writerows(zip([name] * traj.n_rounds, *(columns[f] for f in TURN_FIELDS[1:])))

    write_atomic(path, write, flag)
