"""A sweep's rows: one per configuration and mode, as CSV or JSON, written atomically; the journal ``--resume`` reads.

Columns (SI numbers, unit-suffixed names): the group keys (hardware, model, workload, accounting, one ``set_KEY``
column per ``--set`` axis, the budget as ``budget_<unit>``, the bound options), the configuration (P, D, nodes,
GPUs), the mode, the bound (turns/s, agents/s, per GPU, hit-KV rate at the bound, DE-read fraction), the binding
limits and why a side serves nothing (space-separated names; a configuration that serves nothing has no binding limit
and no rank), the optimal-set flag and the pick (both false where a group serves nothing), the place in the pick rule's
order (``rank_in_group``; 0 is the pick), the robust bound (members
of the optimal set only), the money cost, and the runner check's columns (empty where a configuration was not
checked; ``check_runner_rank`` from 1, as the tables): an offline check's steady turns/s, whole-run turns/s, JCT and
steady turns/s over the bound of its window's own turns,
or an online check's capacity within the SLO, its bound at the SLO and its probes (``gridonline``), the other kind's
columns empty.

Rows come in the grid's order (group after group, P ascending, the modes in ``lp.MODES`` order) whatever
order the runner's tasks finished in, so an interrupted and resumed sweep writes the same bytes as one run
straight through. While the runner works, each finished task is appended to a journal next to the first output
(``F.partial``, JSON lines, flushed per line); the outputs are written to temporary names and renamed when every
task has finished, then the journal is removed. ``--resume`` reads the journal and the check columns of
existing outputs, and runs only what neither holds.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path

from dualpath_plan.bounds.compute import resolve_dtype
from dualpath_plan.bounds.lp import MODES
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import parse_override
from dualpath_plan.planning.executor import Outcome
from dualpath_plan.model.axes import BUDGETS
from dualpath_plan.planning.gridcheck import RowCheck
from dualpath_plan.planning.gridsweep import GridSweep
from dualpath_plan.report.files import write_atomic

JOURNAL_SUFFIX = ".partial"
_JOURNAL_HEAD = {"dualpath_plan": "sweep journal", "version": 1}
ROW_COLUMNS = ("P", "D", "nodes", "gpus", "mode", "turns_per_s", "agents_per_s", "turns_per_s_per_gpu", "kv_at_bound_Bps", "de_read_fraction",
               "binding", "serves_nothing_because", "in_optimal_set", "rank_in_group", "picked", "robust_turns_per_s", "storage_nodes")
COST_COLUMNS = {"purchase": ("cost_usd", "usd_per_turn_per_s"), "rent": ("cost_usd_per_hour", "usd_per_turn")}
ENERGY_COLUMNS = ("power_kw", "joules_per_turn")
CHECK_COLUMNS = ("check_agents", "check_agents_served", "check_seeds", "check_steady_turns_per_s", "check_steady_ci95_low", "check_steady_ci95_high",
                 "check_turns_per_s", "check_jct_s", "check_steady_over_window_bound", "check_ttft_slo_s", "check_capacity_agents_per_s", "check_capacity_ci95_low",
                 "check_capacity_ci95_high", "check_bound_at_slo_agents_per_s", "check_probes", "check_every_probe_met", "check_over_bound",
                 "check_runner_rank", "check_key")


def set_keys(sweep: GridSweep) -> tuple[str, ...]:
    return tuple(key for key, _ in sweep.axes.sets)


def columns(sweep: GridSweep) -> tuple[str, ...]:
    """Every column, in order."""
    kind = sweep.grid.groups[0].kind
    keys = ("profile", "pe_profile", "de_profile", "model", "workload", "accounting", *(f"set_{k}" for k in set_keys(sweep)),
            BUDGETS[kind].column, "dtype", "tpot_slo_s", "decode_instance_nodes", "prefill_instance_nodes", "storage_profile")
    return (*keys, *ROW_COLUMNS, *COST_COLUMNS["purchase"], *COST_COLUMNS["rent"], *ENERGY_COLUMNS, *CHECK_COLUMNS)


def _group_keys(sweep: GridSweep) -> list[tuple]:
    """Each group's key values, in the key columns' order."""
    g, options = sweep.grid, sweep.grid.options
    wanted = set_keys(sweep)
    out = []
    for grp in g.groups:
        fam = g.families[grp.family]
        sc = fam.scenario
        given = dict(parse_override(text) for text in fam.sets)  # as typed: 400, 0.9, a word
        amount = int(grp.amount) if grp.kind in ("nodes", "gpus") else grp.amount
        out.append((sc.profile_label, fam.pe_profile, fam.de_profile, sc.model.name, sc.workload.name, sc.accounting,
                    *(given.get(k) for k in wanted), amount, resolve_dtype(sc.model, options.dtype), options.decode.tpot_slo_s,
                    options.decode.instance_nodes, options.prefill_instance_nodes, None if sc.storage is None else sc.storage.name))
    return out


def rows(sweep: GridSweep, only: list[int] | None = None) -> Iterator[tuple]:
    """Every row's values (or those of the configurations ``only``), in :func:`columns`' order (module docstring): None
    where a value is missing."""
    g = sweep.grid
    keys = _group_keys(sweep)
    cost = {mode: sweep.money_cost(mode).tolist() for mode in MODES}  # the row's storage nodes included
    watts = {mode: sweep.power_W(mode).tolist() for mode in MODES}
    cost_at = 0 if sweep.basis == "purchase" else 2
    P, D, gpus, group, h, tpa = (a.tolist() for a in (g.P, g.D, g.gpus, g.group, g.hit_bytes, g.turns_per_agent))
    names: dict[tuple, str] = {}
    cols = {m: tuple(a.tolist() for a in (c.turns_per_s, c.de_read_fraction, c.binding, c.in_optimal_set, c.rank, c.robust_turns_per_s,
                                          c.storage_nodes)) for m, c in g.modes.items()}
    nothing = g.nothing.tolist()
    slo_s = None if sweep.plan is None or sweep.plan.slo is None else sweep.plan.slo.ttft_slo_s
    for i in range(g.size) if only is None else only:
        why = _names(names, "nothing", nothing[i]) or None
        for mode in MODES:
            X, f, bits, member, rank, robust, nodes = (col[i] for col in cols[mode])
            money = [None] * 4
            if not math.isnan(whole := cost[mode][i]):
                money[cost_at] = whole
                money[cost_at + 1] = sweep.money.per_turn(whole, X)
            check = _check_values(sweep.checks.get((i, mode)), slo_s)
            drawn = watts[mode][i]
            power = (None, None) if math.isnan(drawn) else (drawn / 1e3, drawn / X if X > 0 else None)
            yield (*keys[group[i]], P[i], D[i], P[i] + D[i], gpus[i], mode, X, X / tpa[i], X / gpus[i], X * h[i], f,
                   None if why and not X > 0 else (_names(names, mode, bits) or None), why,  # nothing served: nothing binds (as lp.make_bound)
                   bool(member) and X > 0, None if why and not X > 0 else rank, rank == 0 and X > 0,  # nothing served: no rank, nothing to buy
                   None if math.isnan(robust) else robust, None if nodes < 0 else nodes, *money, *power, *check)


def _names(memo: dict, what: str, bits: int) -> str:
    """The names of the set bits of a binding mask (a mode's) or of a serves-nothing mask (``what`` = "nothing")."""
    key = (what == "nothing", bits)
    if key not in memo:
        from dualpath_plan.planning.grid import GRID_LIMITS, NOTHING_WHY

        table = NOTHING_WHY if what == "nothing" else GRID_LIMITS
        memo[key] = " ".join(name for k, name in enumerate(table) if bits >> k & 1)
    return memo[key]


def _check_values(check: RowCheck | None, slo_s: float | None) -> tuple:
    """A check's columns: the offline ones or the online ones (capacity within the SLO), the other kind's empty."""
    if check is None:
        return (None,) * len(CHECK_COLUMNS)
    offline = (check.agents, check.agents_served, check.seeds, check.steady_turns_per_s, check.ci95_low, check.ci95_high, check.turns_per_s,
               check.jct_s, check.over_window_bound)
    online = (None,) * 7
    if check.online:
        offline = (None, None, check.seeds, *(None,) * 6)
        online = (slo_s, check.capacity_aps, check.ci95_low, check.ci95_high, check.bound_aps, check.probes, check.every_probe_met)
    return (*offline, *online, check.over_bound, check.runner_rank + 1, check.key)  # ranks from 1 in every output


def write_csv(sweep: GridSweep, path: Path, flag: str = "--csv") -> None:
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(columns(sweep))
            out.writerows(rows(sweep))

    write_atomic(path, write, flag)


def write_json(sweep: GridSweep, path: Path, flag: str = "--json-file") -> None:
    """A JSON array of row objects (``null`` where a value is missing)."""
    names = columns(sweep)

    def write(tmp: Path) -> None:
        with tmp.open("w") as handle:
            handle.write("[")
            for k, row in enumerate(rows(sweep)):
                handle.write(("\n" if k == 0 else ",\n") + json.dumps(dict(zip(names, row)), allow_nan=False))
            handle.write("\n]\n")

    write_atomic(path, write, flag)


def read_rows(path: Path, flag: str) -> list[dict]:
    """An output's rows as dicts (CSV values as text, JSON values as typed)."""
    try:
        if flag == "--json-file":
            data = json.loads(Path(path).read_text())
            if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
                raise ValueError("not an array of rows")
            return data
        with open(path, newline="") as handle:
            return list(csv.DictReader(handle))
    except RecursionError:
        raise PlanError(f"{flag} {path}: cannot be resumed from (its JSON is nested too deep to be rows); remove it or drop --resume",
                        2) from None
    except (OSError, ValueError, csv.Error) as exc:
        raise PlanError(f"{flag} {path}: cannot be resumed from ({exc}); remove it or drop --resume", 2) from None


def earlier_checks(path: Path, flag: str) -> dict[str, RowCheck]:
    """The configuration checks an existing output holds, by configuration key (a row whose check columns do not read as
    numbers is refused in one line: the file is not one this command wrote)."""
    out = {}
    found = read_rows(path, flag)
    if not found or "check_key" not in found[0]:
        raise PlanError(f"{flag} {path}: not a row file of dualpath-plan sweep (no check_key column); --resume would overwrite it: "
                        "give the sweep's own output, or drop --resume", 2)
    for number, row in enumerate(found, start=2):
        key = row.get("check_key")
        if key in (None, ""):
            continue
        try:
            out[str(key)] = _read_check(str(key), row)
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"{flag} {path}: row {number} holds a check whose columns are not finite numbers >= 0, or leave one empty "
                            "that its kind needs; it cannot be resumed from (remove it or drop --resume)", 2) from None
    return out


def _read_check(key: str, row: dict) -> RowCheck:
    """One row's check, offline or online (its capacity column given), as :func:`_check_values` wrote it; ValueError for a
    value out of range, a field its kind needs left empty, or one end of an interval without the other."""
    num = lambda name: None if row.get(name) in (None, "") else _number(row[name])  # noqa: E731

    def need(name: str) -> float:
        if (value := num(name)) is None:
            raise ValueError(f"{name} is empty")
        return value

    online = num("check_capacity_agents_per_s") is not None
    low, high = (num(f"check_{'capacity' if online else 'steady'}_ci95_{end}") for end in ("low", "high"))
    if (low is None) != (high is None):
        raise ValueError("one end of an interval")
    rank, seeds = int(need("check_runner_rank")) - 1, int(need("check_seeds"))
    if not online:
        return RowCheck(key, int(need("check_agents")), seeds, need("check_steady_turns_per_s"), need("check_turns_per_s"), num("check_jct_s"),
                        num("check_over_bound"), rank, low, high, over_window_bound=num("check_steady_over_window_bound"),
                        agents_served=None if (served := num("check_agents_served")) is None else int(served))
    met = row.get("check_every_probe_met")
    if met not in (True, False, "True", "False"):
        raise ValueError(f"check_every_probe_met {met!r}")
    return RowCheck(key, None, seeds, None, None, None, num("check_over_bound"), rank, low, high, need("check_capacity_agents_per_s"),
                    need("check_bound_at_slo_agents_per_s"), int(need("check_probes")), met in (True, "True"))


def _number(text) -> float:
    """A check column's value (CSV text or a JSON number): finite and not negative, else ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r}")
    value = float(text)
    if not 0 <= value < math.inf:
        raise ValueError(f"{text!r} is not a finite number >= 0")
    return value


def journal_paths(outputs: list[Path]) -> list[Path]:
    """Where a sweep's journal may stand: beside each row file, in the order given; none beside an output that is not
    a regular file (``/dev/null``, a FIFO: nothing is made in ``/dev``)."""
    return [Path(str(p) + JOURNAL_SUFFIX) for p in outputs if not Path(p).exists() or Path(p).is_file()]


def journal_path(outputs: list[Path]) -> Path | None:
    """The journal a sweep writes: the one that stands beside a row file already (an interrupted sweep's, whichever
    file it named first), else beside the first row file; None beside devices only."""
    places = journal_paths(outputs)
    return next((p for p in places if present(p)), places[0] if places else None)


def present(path: Path) -> bool:
    """Whether ``path`` is there, a link to nowhere included (a journal must then be refused, not taken as absent)."""
    return path.exists() or path.is_symlink()


def _regular(path: Path) -> Path:
    """A journal must be a regular file (a FIFO would block its reading forever; a symbolic link would be written
    at its target and left there)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise PlanError(f"{path}: the sweep's journal must be a regular file, and this is not one (a FIFO, device or symbolic "
                        "link); remove it or give another output", 2)
    return path


def check_no_journal(outputs: list[Path]) -> None:
    """Refuse to start afresh over the journal of an interrupted sweep: its runs would be lost."""
    for path in journal_paths(outputs):
        if present(_regular(path)):
            raise PlanError(f"{path} holds the runs of an interrupted sweep ({len(read_journal(path))} of them): add --resume to keep "
                            "them, or remove it to start afresh", 2)


class Journal:
    """The finished runs of a sweep, one JSON line each, appended and flushed as they finish. The file is made at the first
    run (a sweep refused before any run leaves none); resuming, a line cut short by a kill is cut off first, and the
    journal kept is the one beside whichever row file the interrupted sweep named first (two are refused)."""

    def __init__(self, outputs: list[Path], resume: bool) -> None:
        self.path = _regular(journal_path(outputs))
        found = [path for path in journal_paths(outputs) if present(_regular(path))]
        if resume and len(found) > 1:  # one may be another sweep's: merged, its runs would pass as this one's and be removed
            raise PlanError(f"--resume: {found[0]} and {found[1]} both hold the runs of an interrupted sweep; keep the one this "
                            "command wrote and remove the other", 2)
        self.kept: dict[str, Outcome] = read_journal(self.path, strict=True) if resume and found else {}
        self.handle = None

    def _open(self) -> None:
        try:
            if self.path.exists():
                _cut_torn_line(self.path)
                self.handle = self.path.open("a")
            else:
                self.handle = self.path.open("w")
                self._line(_JOURNAL_HEAD)
        except OSError as exc:
            raise PlanError(f"the sweep's journal {self.path}: cannot write ({exc.strerror or exc})", 1) from None

    def _line(self, data: dict) -> None:
        self.handle.write(json.dumps(data) + "\n")
        self.handle.flush()

    def add(self, outcome: Outcome) -> None:
        if self.handle is None:
            self._open()
        self._line(outcome.as_json())

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def _cut_torn_line(path: Path) -> None:
    """Drop a last line without its newline (a kill mid-write), so the next line starts a line of its own."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def read_journal(path: Path, strict: bool = False) -> dict[str, Outcome]:
    """The runs a journal holds; a line cut short by a kill, or not a run, is skipped. ``strict``: a file whose first line
    is not a journal's head is refused (it is some other file)."""
    out = {}
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise PlanError(f"the sweep's journal {path}: cannot be read ({exc.strerror or exc})", 2) from None
    if strict and (not lines or _head(lines[0]) != _JOURNAL_HEAD):
        raise PlanError(f"{path}: not a journal of dualpath-plan sweep (its first line is not one); remove it, or give another output", 2)
    for line in lines:
        try:
            outcome = Outcome.from_json(json.loads(line.decode("utf-8")))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):  # not a run, or a bad value
            continue
        out[outcome.key] = outcome
    return out


def checked_with_journal(sweep: GridSweep, count: int, seeds: int, files: list[tuple[str, Path]], resume: bool, *, engine: str = "auto",
                         executor: str = "local", jobs: int | None = None, address: str | None = None, on_done=None, on_compile=None,
                         on_start=None, online: bool = False, ttft_slo_s: float | None = None, on_round=None) -> GridSweep:
    """``gridsweep.checked`` (or, ``online``, ``gridonline.checked_online``) with the journal of the row files ``files``
    ((flag, path), the first names the journal): each finished run or probe is appended to it; with ``resume`` the runs
    it and the files' check columns hold are kept. Ctrl-C raises ``executor.Interrupted`` with the journal kept
    (``journal`` attribute: its path, or None without files)."""
    from dualpath_plan.planning.executor import Interrupted
    from dualpath_plan.planning.gridsweep import checked

    paths = [path for _, path in files]
    if paths and not resume:
        check_no_journal(paths)
    journal = Journal(paths, resume) if journal_path(paths) is not None else None
    earlier: dict[str, RowCheck] = {}
    for flag, path in files if resume else ():
        if Path(path).exists():
            earlier |= earlier_checks(path, flag)

    def done(outcome: Outcome) -> None:
        if journal is not None:
            journal.add(outcome)
        if on_done is not None:
            on_done(outcome)

    kept = journal.kept if journal else None
    try:
        if online:
            from dualpath_plan.planning.gridonline import checked_online

            return checked_online(sweep, count, seeds, ttft_slo_s=ttft_slo_s, engine=engine, executor=executor, jobs=jobs, address=address,
                                  done=kept, earlier=earlier, on_done=done, on_compile=on_compile, on_round=on_round)
        return checked(sweep, count, seeds, engine=engine, executor=executor, jobs=jobs, address=address, done=kept,
                       earlier=earlier, on_done=done, on_compile=on_compile, on_start=on_start)
    except Interrupted as stop:
        stop.journal = journal.path if journal is not None and journal.path.exists() else None
        raise
    finally:
        if journal is not None:
            journal.close()


def finish(sweep: GridSweep, files: list[tuple[str, Path]]) -> None:
    """Write the row files (``--csv``, ``--json-file``), then remove the journal a runner check's runs went to."""
    for flag, path in files:
        (write_json if flag == "--json-file" else write_csv)(sweep, path, flag)
    if files and sweep.plan is not None:  # a sweep without a check never used a journal: one beside its files is another's
        for path in journal_paths([p for _, p in files]):  # the one journal a sweep wrote or resumed from
            if path.is_file():
                path.unlink()


def _head(line: bytes):
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def budget_text(kind: str, amount: float) -> str:
    from dualpath_plan.model.fmt import fmt

    unit = BUDGETS[kind].unit
    return f"{int(amount):,} {unit}" if kind in ("nodes", "gpus") else fmt(amount, unit)
