"""The clock of the fluid runner: one loop, fixed steps, a deterministic order of work in each step.

The mechanism is described in ``sim.runner``'s docstring; this module owns time. State lives in
``sim.python.engine.Engine``, decisions in ``sim.python.policies``, rates in ``sim.python.share``.

Two details keep a coarse step exact where it matters:

* **Late work** (``sim.python.late``): work that becomes ready inside a step starts, in capacity and in
  time, when it became ready, not at the next step boundary.
* **Quiet steps.** After a step in which nothing happened (no arrival, decision, admission, batch,
  or completion) the rates stay the same until the next completion, due fetch or arrival; the clock
  advances all the whole steps before it at once (charging elapsed time times rate, rule 13).
"""

from __future__ import annotations

import heapq
import math
from typing import Callable

import numpy as np

from dualpath_plan.model.errors import PlanError
from dualpath_plan.sim.clocksteps import steps_until
from dualpath_plan.sim.metrics import Meter
from dualpath_plan.sim.python.engine import Engine
from dualpath_plan.sim.python.late import LateWork
from dualpath_plan.sim.python.policies import Fetch
from dualpath_plan.sim.python.share import allocate, make_incidence
from dualpath_plan.sim.python.state import H2D, LOAD, READ_DE, READ_PE
from dualpath_plan.sim.waits import root_order

BATCH_DONE_REL = 1e-12  # a batch within 1e-12 of its end has finished
PROGRESS_S = 10.0  # simulated seconds between progress callbacks and online stop checks


class Clock:
    """Runs an :class:`Engine` step by step until every agent is done (or an online run stops)."""

    def __init__(self, eng: Engine, policy: Callable, meter: Meter, dt: float, fetch_period: float,
                 arrivals: np.ndarray, stop_check: Callable[[float], bool] | None, stall_s: float,
                 on_progress: Callable[[float], None] | None) -> None:
        self.eng, self.policy, self.meter = eng, policy, meter
        self.dt, self.stall_s, self.on_progress, self.stop_check = dt, stall_s, on_progress, stop_check
        L = eng.L
        self.ticks = [(i * fetch_period / L.P, 0, i) for i in range(L.P)]
        self.ticks += [((0.5 + j / L.D) * fetch_period, 1, j) for j in range(L.D)]
        heapq.heapify(self.ticks)
        self.period = fetch_period
        self.order = root_order(arrivals)  # forks (inf) arrive when their parent releases them (sim.waits)
        self.arrival = arrivals[self.order]
        self.next_arrival = 0
        self.budget = L.capacity * dt
        self._ready_at: dict[int, float] = {}  # PEs whose ready queue filled during this step: when
        entry_pipe = np.repeat(np.arange(eng.pipes.n), eng.pipes.lengths)
        self.late = LateWork(L, (entry_pipe, eng.pipes.res), eng.feat.layerwise, dt)
        self._window = np.asarray(eng.read_window)  # Layout.read_window_bytes, per read pipe
        self._flows_cache: tuple | None = None
        self._last_alloc: tuple | None = None
        self._last_step: tuple | None = None
        self.steps = 0
        self.stopped_early = False

    def run(self) -> float:
        """Step until done; return the simulated time at the end of the last step."""
        t, last_progress, n, next_report = 0.0, 0.0, self.eng.traj.n_agents, PROGRESS_S
        while self.eng.finished < n:
            events = self._arrivals(t) | self._waits(t) | self._fetch(t)
            events |= self.eng.admit() > 0
            events |= self.eng.form_batches() > 0
            events_step, moved = self._advance(t)
            self.steps += 1
            t = self.steps * self.dt  # the clock is the step count: no sum of steps drifts from a jump's product
            if not (events or events_step):  # quiet, or idle until the next arrival or due fetch
                self._jump(t)
                t = self.steps * self.dt
            if moved or events or events_step:
                last_progress = t
            elif t - last_progress > self.stall_s and self.next_arrival >= self.arrival.size and not self.eng.waiting:
                raise PlanError(f"the fluid run made no progress for {self.stall_s:g} s of simulated time at t = {t:.6g} s "
                                f"({self.eng.rounds_done} turns done); this is a bug in the runner, please report it", 1)
            if t >= next_report:
                next_report = t + PROGRESS_S
                if self.on_progress is not None:
                    self.on_progress(t)
                if self.stop_check is not None and self.stop_check(t):
                    self.stopped_early = True
                    break
        return t

    # --- arrivals and fetches ------------------------------------------------------------------------

    def _arrivals(self, t: float) -> bool:
        if self.next_arrival >= self.arrival.size or self.arrival[self.next_arrival] > t:
            return False
        stop = int(np.searchsorted(self.arrival, t, side="right"))  # > next_arrival: that one is due
        idx = slice(self.next_arrival, stop)
        self.eng.start_turns(self.order[idx], self.arrival[idx])
        self.next_arrival = stop
        return True

    def _waits(self, t: float) -> bool:
        """Every agent whose tool time (or fork delay) is over by ``t`` starts its turn, in (time, agent) order."""
        waiting = self.eng.waiting
        if not waiting or waiting[0][0] > t:
            return False
        due = []
        while waiting and waiting[0][0] <= t:
            due.append(heapq.heappop(waiting))
        self.eng.start_turns(np.array([a for _, a in due], dtype=np.int64), np.array([w for w, _ in due]))
        return True

    def _fetch(self, t: float) -> bool:
        """Every fetch due by ``t``, in time order. A PE fetch due at ``when`` sees the turns that had arrived by
        ``when - dt`` (``policies.Fetch``): a turn arrives when its write-back ends, and the engine learns of it in
        the step that handles that end, up to one step after it happened (a write-back that started late in a step
        ends before that step is over). ``when - dt`` is the latest time by which every arrival is known, the same
        for every group. A fetch that took every turn in the queue favoured the groups due first in a step: with
        more PE groups than steps in a fetch period (P > 6 at 50 ms steps and 300 ms), those took 2x the work of
        the others, which then found the queue empty and left their nodes' storage NICs idle (on 24P48D a quarter
        of the prefill nodes held 4 % of the work they could)."""
        eng, moved = self.eng, False
        while self.ticks and self.ticks[0][0] <= t:
            when, side, group = heapq.heappop(self.ticks)
            when += self.period * math.floor((t - when) / self.period)  # after a quiet jump: its latest occurrence
            fetch = Fetch("pe" if side == 0 else "de", group, when - self.dt)
            if self._has_work(fetch):
                eng.view.read_q = eng.pipes.read_backlog() / eng.L.kv_bytes_per_token
                decisions = self.policy(eng.view, fetch)
                if decisions.pe or decisions.de or decisions.to_group:
                    eng.now = when  # the fetch was due then: reads it starts are late work (sim.python.late)
                    eng.apply(decisions, fetch)
                    eng.now = None
                    moved = True
            later = when + self.period * max(1.0, math.ceil((t - when) / self.period + 1e-12))
            heapq.heappush(self.ticks, (later, side, group))
        return moved

    def _has_work(self, fetch: Fetch) -> bool:
        v = self.eng.view
        if fetch.side == "pe":
            return bool(v.pe_wait) and v.arrive[v.pe_wait[0]] <= fetch.seen
        return bool(v.de_wait) or bool(v.de_private[fetch.group])

    # --- rates ---------------------------------------------------------------------------------------

    def _flows(self) -> tuple:
        """The step's flows: every pipe (idle ones have no work and take no share), then every running
        batch in PE order. The incidence is rebuilt only when the set of batches changed."""
        eng, pipes = self.eng, self.eng.pipes
        if eng.batches_changed or self._flows_cache is None:
            ids = np.array(sorted(eng.active), dtype=np.int64)
            lengths = np.concatenate((pipes.lengths, np.array([eng.batch_res[i].size for i in ids], dtype=np.int64)))
            inc = make_incidence(lengths, np.concatenate((pipes.res, *(eng.batch_res[i] for i in ids))),
                                 np.concatenate((pipes.coef, *(eng.batch_coef[i] for i in ids))),
                                 np.concatenate((np.ones(pipes.n), eng.batch_weight[ids])))
            self._flows_cache = (ids, inc)
            eng.batches_changed = False
            self._last_alloc = None
        ids, inc = self._flows_cache
        work = np.concatenate((pipes.work(), 1.0 - eng.batch_prog[ids]))
        return inc, work, ids

    def _rates(self, t: float) -> tuple:
        """Progress per flow for this step, and the share of the step each flow runs: the previous step's
        when the same flows are busy, none finished and no late work adds capacity (the max-min
        allocation is then the same), else a fresh allocation."""
        inc, work, ids = self._flows()
        busy = work > 0
        bonus = self.late.bonus(t)
        last = self._last_alloc
        if bonus is None and last is not None and np.array_equal(busy, last[3]) and not np.count_nonzero(work < last[0]):
            x, used, active, budget = last[0], last[1], last[2], self.budget
        else:
            budget = self.budget if bonus is None else self.budget + bonus
            x, used, active = allocate(inc, budget, work)
            self._last_alloc = None if (bonus is not None or np.count_nonzero(active < 1.0)) else (x, used, active, busy)
        self.late.remember(budget, used)
        return x, used, active, ids, budget

    def _late_pe(self, pe: int, t: float, frac: float) -> None:
        self.late.pe(pe, t + frac * self.dt)

    # --- advancing -------------------------------------------------------------------------------------

    def _advance(self, t: float) -> tuple[bool, bool]:
        """One step of every flow and decode batch; returns (a completion happened, anything moved)."""
        eng, dt, n_pipes = self.eng, self.dt, self.eng.pipes.n
        for pipe, tau in eng.late_pipes:
            self.late.pipe(pipe, tau)
        eng.late_pipes.clear()
        x, used, active, ids, budget = self._rates(t)
        xp, xb = x[:n_pipes], x[n_pipes:]
        before = eng.pipes.advance(xp)
        prog_before = eng.batch_prog[ids]
        eng.batch_prog[ids] = prog_before + xb
        v_before, gained = eng.dec.advance(dt)
        decoding = float(eng.dec.count @ gained)
        events = self._pipe_done(t, before, active[:n_pipes]) | self._batch_done(t, ids, prog_before, xb, active[n_pipes:])
        for a, frac in eng.dec.completions(v_before, gained):
            eng.now = t + frac * dt
            eng.decode_done(a, eng.now)
            events = True
        eng.now = None
        self.meter.step(t + dt, dt, used, xp[: eng.L.P + eng.L.D], decoding, eng.stage_load)
        # a step run on carried capacity is not a rate that lasts: no quiet-step jump may repeat it
        self._last_step = None if budget is not self.budget else (x, used, ids, gained, decoding)
        return events, decoding > 0 or bool(np.count_nonzero(x))

    def _jump(self, t: float) -> float:
        """Advance the whole quiet steps before the next event at the last step's rates; return the time."""
        eng, dt = self.eng, self.dt
        if self._last_step is None:
            return 0.0
        x, used, ids, gained, decoding = self._last_step
        n_pipes = eng.pipes.n
        xp, xb = x[:n_pipes], x[n_pipes:]
        steps = min(self._steps_to_event(t, xp, xb, ids, gained), 10**9)
        k = int(steps)
        if k < 1:
            return 0.0
        eng.pipes.served = eng.pipes.served + k * xp
        eng.batch_prog[ids] += k * xb
        eng.dec.V = eng.dec.V + k * gained
        self.meter.span(t, k * dt, used, xp[: eng.L.P + eng.L.D], decoding, k, eng.stage_load)
        self.steps += k
        return k * dt

    def _steps_to_event(self, t: float, xp: np.ndarray, xb: np.ndarray, ids: np.ndarray, gained: np.ndarray) -> float:
        """Whole steps from ``t`` in which no flow finishes and no fetch or arrival is due."""
        eng, dt = self.eng, self.dt
        with np.errstate(divide="ignore", invalid="ignore"):
            pipe = np.where(xp > 0, (eng.pipes.head_end - eng.pipes.served) / xp, np.inf)
            batch = np.where(xb > 0, (1.0 - eng.batch_prog[ids]) / xb, np.inf)
            dec = np.where(gained > 0, (eng.dec.first_end - eng.dec.V) / gained, np.inf)
        nearest = min(pipe.min(initial=np.inf), batch.min(initial=np.inf), dec.min(initial=np.inf))
        limit = math.ceil(nearest) - 1 if math.isfinite(nearest) else math.inf
        limit = min(limit, self._window_opens(xp))
        due = [w for when, side, group in self.ticks if (w := self._next_work(when, side, group)) < math.inf]
        if self.next_arrival < self.arrival.size:
            due.append(float(self.arrival[self.next_arrival]))
        if self.eng.waiting:
            due.append(self.eng.waiting[0][0])
        if due:
            limit = min(limit, steps_until(min(due), self.steps, dt))
        return limit if math.isfinite(limit) else 0.0

    def _window_opens(self, xp: np.ndarray) -> float:
        """Whole steps before a read pipe whose queue waits on its full read window drains below it (an admission
        at the next step's start); a quiet jump must not pass that step."""
        pipes = self.eng.pipes
        read = np.array(sorted(p for p in pipes.blocked if p < pipes.load0), dtype=np.int64)  # read pipes with a queue
        read = read[xp[read] > 0]
        if not read.size:
            return math.inf
        over = (pipes.admitted[read] - pipes.served[read] - self._window[read - pipes.read0]) / xp[read]
        over = over[over >= 0]
        return float(np.floor(over).min()) if over.size else math.inf

    def _next_work(self, when: float, side: int, group: int) -> float:
        """The first time from ``when`` on, in whole periods, at which this tick's fetch would have work (inf: none
        now): a PE fetch sees the head of the queue only once it arrived a step before (``_fetch``)."""
        v = self.eng.view
        if side == 1:
            return when if (v.de_wait or v.de_private[group]) else math.inf
        if not v.pe_wait:
            return math.inf
        head = v.arrive[v.pe_wait[0]]
        if head <= when - self.dt:  # the test _has_work makes
            return when
        return when + self.period * math.ceil((head + self.dt - when) / self.period)

    # --- completions -----------------------------------------------------------------------------------

    def _pipe_done(self, t: float, before: np.ndarray, active: np.ndarray) -> bool:
        eng = self.eng
        done = eng.pipes.completions(before, active)
        nxt, at = [], []
        for pipe, a, tag, frac in done:
            eng.now = when = self.late.time("pipe", pipe, t, frac)
            if tag == READ_PE or tag == READ_DE or tag == LOAD:
                if tag != LOAD:
                    eng.reads_left[a] -= 1
                    if eng.reads_left[a]:
                        continue
                pe = eng.view.pe_of[a]
                if not eng.ready[pe] and (tag == LOAD or eng.feat.layerwise):
                    self._ready_at.setdefault(pe, (when - t) / self.dt)  # when the PE first had work in this step
                eng.load_done(a) if tag == LOAD else eng.read_done(a)
            elif tag == H2D:
                eng.h2d_done(a, when, max(t + self.dt - when, 0.0))
            elif eng.writeback_done(a, when):
                nxt.append(a)
                at.append(when)
        eng.now = None
        if nxt:
            eng.start_turns(np.array(nxt, dtype=np.int64), np.array(at))
        return bool(done)

    def _batch_done(self, t: float, ids: np.ndarray, prog_before: np.ndarray, xb: np.ndarray, active: np.ndarray) -> bool:
        eng = self.eng
        done = eng.batch_prog[ids] >= 1.0 - BATCH_DONE_REL
        finished = [(pe, 0.0, False) for pe in eng.instant]
        eng.instant.clear()
        if np.count_nonzero(done):
            frac = np.minimum(np.maximum((1.0 - prog_before[done]) / np.where(xb[done] > 0, xb[done], 1.0), 0.0), 1.0) * active[done]
            finished += [(pe, f, True) for pe, f in zip(ids[done].tolist(), frac.tolist())]
        for pe, frac, ran in finished:
            eng.now = when = self.late.time("pe", pe, t, frac)
            eng.batch_done(pe, when)
            if ran and eng.ready[pe]:  # the next batch could have started when this one ended and work was there
                self._late_pe(pe, t, max((when - t) / self.dt, self._ready_at.pop(pe, 0.0)))
        eng.now = None
        for pe, frac in self._ready_at.items():  # an idle PE could have started when its first request was ready
            if not eng.batch_members[pe]:
                self._late_pe(pe, t, frac)
        self._ready_at.clear()
        return bool(finished)
