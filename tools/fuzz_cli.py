"""Command-line fuzzing: generated invocations of every command, flag and profile field, tried as a hostile
user would, each classified by how it ended.

    python tools/fuzz_cli.py                      # 2,000 invocations, seed 20261201, 2 at a time
    python tools/fuzz_cli.py --count 300 --seed 7 --jobs 1

An invocation starts from a small valid command line (a cluster that runs in about a second) and applies one
to three mutations: a flag with a value from a hostile pool (its range's ends and just past them, 0, -1, NaN,
infinities, 5e-324, 1e309, 400-digit integers, words, unicode digits, empty), a ``--set`` on any profile field
(either side), a flag without its value, an unknown flag, a hostile file (a FIFO, a directory, a device, a file
nested 2,000 deep, a 5,000-digit number, binary bytes, an empty file, 2 MB of text) as ``--profile-file``,
``--trace``, ``--scenario`` (also a dotted key 1,500 deep, unicode axis numbers), ``--csv``, ``--plot``, ``--timeseries`` or
``--turns``, a hostile journal under ``sweep --resume`` (NaN, ``"nan"``, 1e400, a negative JCT, ``true``, a 401-digit
number, a line nested 100,000 deep, binary bytes, a FIFO, a symbolic link to ``/dev/zero`` or to nothing), a Ray
address under ``sweep --check --executor ray`` (30-digit, negative, non-numeric and out-of-range ports, a port
nothing answers at, a stale ``RAY_ADDRESS``), a hostile environment (``COLUMNS=0``/``1``, a ``DUALPATH_PLAN_PROFILES``
directory holding a broken profile), stdout closed after its first line, or a kill (SIGTERM, or SIGKILL
followed by a second run to the same output). Legal values are drawn small on purpose: a legal 8,191-node
cluster or 262,144 agents takes as long as its size says, which is the benchmarks' business, not this one's.

Each run ends in one class: ``ok`` (exit 0, or SIGPIPE's status with nothing on stderr after stdout closed early),
``clean error`` (exit 1 or 2, one line on stderr, nothing on stdout), ``multi-line`` (an error of more or
fewer lines), ``traceback``, ``hang`` (no exit within the timeout), ``silent`` (a non-zero exit with an empty
stderr), ``killed`` (a kill the process handled: exit 143, or the SIGKILL) or ``other`` (any other exit). After
every run the working directory is searched for temporary files (``.NAME.PID.XXXXXXXX.tmp``) and for output
files a failed run left; both are counted apart (``left files``). The suite's ``tests/cli/test_fuzz.py`` draws
the same invocations through hypothesis, in process.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dualpath_plan.cli import app  # noqa: E402
from dualpath_plan.cli.options import OptionSpec, command_options  # noqa: E402
from dualpath_plan.model.flags import FLAGS  # noqa: E402
from dualpath_plan.model.profiles import RANGES, SCHEMAS  # noqa: E402

SEED, COUNT, TIMEOUT_S = 20261201, 2000, 120.0
CLASSES = ("ok", "clean error", "multi-line", "traceback", "hang", "silent", "killed", "other")
TINY = ("--profile", "hopper", "--model", "ds-27b", "-P", "1", "-D", "1", "--set", "gpus_per_node=2", "--workload", "agentic-32k")
BASES: dict[str, tuple[str, ...]] = {  # a small valid command line per command: about a second each
    "bottleneck": ("bottleneck", "--profile", "hopper"),
    "formulas": ("formulas",),
    "plan": ("plan", "--profile", "hopper", "--nodes", "8"),
    "simulate": ("simulate", *TINY, "--agents", "6"),
    "sweep": ("sweep", "--profile", "hopper", "--gpus", "48"),
    "compare": ("compare", "--profile", "ampere", "--profile", "hopper"),
    "validate": ("validate", "--skip-sim"),
    "calibrate": ("calibrate", "--from", "measurements.csv", "--base", "hopper", "--ops", "a2a_ll", "-o", "out.toml"),
    "profiles list": ("profiles", "list"),
    "profiles show": ("profiles", "show", "hopper"),
    "profiles workload-from-trace": ("profiles", "workload-from-trace", "good.jsonl", "-o", "out.toml"),
    "trace stats": ("trace", "stats", "v2.jsonl"),
    "trace import": ("trace", "import", "--format", "mooncake", "-o", "out.jsonl", "mooncake.jsonl"),
    # a journal left by an interrupted sweep (Case.journal writes it before the run) and the resume that reads it
    "sweep --resume": ("sweep", "--profile", "hopper", "--model", "llama-3.1-8b", "--workload", "agentic-32k", "--nodes", "2", "--check",
                       "1", "--csv", "resumed.csv", "--resume"),
    # runner checks on a Ray cluster: nothing answers at port 1, and the address mutations below
    "sweep --executor ray": ("sweep", "--profile", "hopper", "--nodes", "6", "--check", "1", "--executor", "ray", "--address",
                             "127.0.0.1:1"),
    "sweep --scenario": ("sweep", "--scenario", "scenario.toml"),
}
JOURNAL = '{"dualpath_plan": "sweep journal", "version": 1}\n'
RUN = '{"key": "K|seed=0", "steady_turns_per_s": 1.0, "turns_per_s": 1.0, "jct_s": 2.0, "bound_turns_per_s": 1.0, "engine": "python"}'
JOURNALS = {  # name -> what resumed.csv.partial is before the run: a text, or a special file
    "nan": JOURNAL + RUN.replace('"jct_s": 2.0', '"jct_s": NaN') + "\n",
    "string nan": JOURNAL + RUN.replace('"jct_s": 2.0', '"jct_s": "nan"') + "\n",
    "1e400": JOURNAL + RUN.replace('"turns_per_s": 1.0,', '"turns_per_s": 1e400,') + "\n",
    "negative jct": JOURNAL + RUN.replace('"jct_s": 2.0', '"jct_s": -1') + "\n",
    "true": JOURNAL + RUN.replace('"jct_s": 2.0', '"jct_s": true') + "\n",
    "401 digits": JOURNAL + RUN.replace('"jct_s": 2.0', '"jct_s": ' + "1" * 401) + "\n",
    "nested": JOURNAL + "[" * 100_000 + "]" * 100_000 + "\n",
    "garbage": "garbage\n",
    "empty": "",
    "binary": "BINARY",
    "fifo": "FIFO",
    "to /dev/zero": "LINK:/dev/zero",
    "dangling": "LINK:nowhere.partial",
}
TRACE_INPUTS = {"profiles workload-from-trace": (2, "FILE"), "trace stats": (2, "FILE..."), "trace import": (-1, "IN...")}
SMALL = {"--agents": 64, "-P": 8, "-D": 8, "--nodes": 16, "--gpus": 128, "--alternatives": 5, "--decode-instance-nodes": 8, "--prefill-instance-nodes": 8, "--check": 2}
NUMBER_WORDS = ("", "abc", "1e", "٣", "0x10", "1_000", " 5", "5 ", "--", "1,5", "true", "[1]")
NAMES = {
    "--profile": ("hopper", "blackwell", "gb200", "mi300x", "nope", "", "../hopper", "a" * 300, "hopper.toml", "fuzzgood"),
    "--model": ("ds-v3.2", "ds-27b", "llama-3.1-8b", "kimi-k2", "nope", "", "DS-V3.2"),
    "--workload": ("agentic-32k", "agentic-48k", "agentic-64k", "nope", ""),
    "--accounting": ("exact", "paper", "EXACT", "", "both"),
    "--dtype": ("fp8", "bf16", "fp4", "", "FP8"),
    "--policy": ("basic", "layerwise", "dualpath-rr", "dualpath", "oracle", "split", "nope", ""),
    "--compare": ("basic,dualpath", "basic,oracle", "basic,,dualpath", "basic,basic", "nope", "", ",", "dualpath"),
    "--engine": ("python", "auto", "compiled", "fast", ""),
    "--mode": ("basic", "dualpath", "oracle", "", "both"),
    "--kind": ("hardware", "model", "workload", "storage", "nope", ""),
    "--storage": ("3fs", "nvme-r7725xd", "nope", "", "3FS", "hopper"),
    "--node-cost": ("250000", "hopper=250000", "hopper=", "=5", "nope=5", "hopper=1e30", "hopper=nan", "-3", "", "hopper=250000=1"),
    "--rent": ("49.24", "hopper=49.24", "hopper=", "=5", "nope=5", "hopper=1e30", "hopper=nan", "0.001", "", "hopper=1=2"),
    "NAME": ("hopper", "ds-v3.2", "agentic-64k", "nope", "", "fuzzgood"),
    "--from": ("aiconfigurator", "measurements.csv", "bad.csv", "missing.csv", "fifo.csv", "folder.toml", "/dev/null", "empty.jsonl", ""),
    "--base": ("hopper", "h100-dgx", "nope", "", "fuzzgood"),
    "--system": ("h100_sxm", "h200_sxm", "a100_sxm", "nope", ""),
    "--backend": ("sglang", "trtllm", "vllm", "nope", ""),
    "--version": ("0.5.14", "0.5.6.post2", "9.9", ""),
    "--ops": ("gemm", "a2a_ll,a2a_normal", "mla_decode", "nope", "", ",", "gemm,gemm"),
    "--trace-format": ("jsonl", "weka", "mooncake", "bailian", "dynamo", "tracelab", "copilot", "nope", "", "JSONL"),
    "--format": ("jsonl", "weka", "mooncake", "bailian", "dynamo", "tracelab", "copilot", "nope", "", "JSONL"),
    "--executor": ("local", "ray", "slurm", "", "RAY"),
    "--address": ("auto", "127.0.0.1:" + "1" * 30, "127.0.0.1:9/", "127.0.0.1:abc", "127.0.0.1:-1", "127.0.0.1:65545", "127.0.0.1:",
                  "127.0.0.1:1e1", "ray://127.0.0.1:1", "ray://127.0.0.1:", "nohost", "", ":smile:"),
}

PROFILE_FILES = ("fuzzgood.toml", "nested.toml", "digits.toml", "big.toml", "binary.toml", "empty.toml", "folder.toml",
                 "fifo.toml", "/dev/null", "/dev/zero", "missing.toml")
SCENARIOS = ("scenario.toml", "deepkey.toml", "unicode.toml", "underscore.toml", *PROFILE_FILES)
TRACES = ("good.jsonl", "v2.jsonl", "mooncake.jsonl", "nested.jsonl", "digits.jsonl", "huge.jsonl", "negative.jsonl", "words.jsonl", "empty.jsonl",
          "folder.toml", "fifo.jsonl", "/dev/null", "missing.jsonl")
TOML_OUTPUTS = ("out.toml", "folder.toml", "fifo.toml", "missing/out.toml", "out.csv", "a" * 256 + ".toml", "/dev/full", "/dev/stdout", "")
OUTPUTS = ("out.csv", "out.png", "out.svg", "folder.toml", "fifo.csv", "missing/out.csv", "a" * 251 + ".csv",
           "a" * 256 + ".csv", "/dev/full", "/dev/stdout", "")


class Draw:
    """Where the choices come from: a seeded ``random.Random`` here, hypothesis's ``data.draw`` in the suite."""

    def __init__(self, choose: Callable[[Sequence], object], integer: Callable[[int, int], int]) -> None:
        self.choose, self.integer = choose, integer

    @classmethod
    def seeded(cls, rng: random.Random) -> Draw:
        return cls(lambda seq: seq[rng.randrange(len(seq))], rng.randint)


@dataclass(frozen=True)
class Case:
    """One invocation: ``argv`` after the program name, extra environment, and how it is disturbed
    (``None``, ``pipe``: stdout closed after one line, ``TERM`` or ``KILL`` after ``delay_s``)."""

    command: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    disturb: str | None = None
    delay_s: float = 0.0
    changes: tuple[str, ...] = ()  # what was changed: a flag's name, "--set KEY", "env NAME" or "unknown"
    journal: str | None = None  # a JOURNALS name: resumed.csv.partial as it is before the run

    @property
    def label(self) -> str:
        """The command, or ``sweep --csv, killed`` for a kill (always a sweep writing a CSV file)."""
        return "sweep --csv, killed" if self.disturb in ("TERM", "KILL") else self.command


# --- values -------------------------------------------------------------------------------------------------

def _number_text(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def number_value(draw: Draw, low: float, high: float, whole: bool, small: float | None = None) -> str:
    """Half the time a legal value (an end of the range or a point inside, drawn small for sizes), half the
    time a hostile one: just past an end, 0, -1, NaN, infinities, denormals, overflows, huge digit strings, words."""
    top = high if small is None else min(high, small)
    if draw.integer(0, 1):
        share = draw.integer(0, 1000) / 1000
        inside = round(low + (top - low) * share) if whole else low + (top - low) * share
        return _number_text(draw.choose((low, top, inside, inside)))
    step = 1 if whole else max(abs(low), abs(high)) * 1e-6
    outside = [_number_text(x) for x in (low - step, high + step, 0, -1, 2.5 if whole else 1e-9)]
    special = ["nan", "inf", "-inf", "1e308", "1e309", "5e-324", "-0", "1" + "0" * 400, "9" * 5000]
    return str(draw.choose((*outside, *special, *NUMBER_WORDS)))


def flag_value(draw: Draw, spec: OptionSpec) -> str:
    if spec.name in FLAGS:
        r = FLAGS[spec.name]
        return number_value(draw, r.low, r.high, r.whole, SMALL.get(spec.name))
    pool = {"--trace": TRACES, "--output": TOML_OUTPUTS, "--profile-file": PROFILE_FILES, "--scenario": SCENARIOS, "--csv": OUTPUTS, "--json-file": OUTPUTS,
            "--plot": OUTPUTS, "--timeseries": OUTPUTS, "--turns": OUTPUTS, "-o": TOML_OUTPUTS}.get(spec.name)
    return str(draw.choose(pool or NAMES.get(spec.name, NUMBER_WORDS)))


def set_value(draw: Draw, kind: str, key: str) -> str:
    """A ``--set KEY=`` value for one profile field: as :func:`number_value`, or its words."""
    field_ = SCHEMAS[kind][key]
    if field_.kind in ("float", "int", "float_or_table") and key in RANGES[kind]:  # --set gives a number, also for a table key
        if draw.integer(0, 9) == 0:
            return str(draw.choose(("[1, 2]", "{a = 1}", "[" * 50 + "]" * 50, "true", '"400"')))
        low, high, _ = RANGES[kind][key]
        return number_value(draw, low, high, field_.kind == "int", {"trajectories": 2000, "turns": 200}.get(key))
    if field_.kind == "table":
        return str(draw.choose(("{a = 1}", "{}", "{a = 0}", "{a = 1e309}", "{a = {b = 1}}", "[1]", "1")))
    if field_.kind == "bool":
        return str(draw.choose(("true", "false", "1", "yes", "")))
    return str(draw.choose((*(field_.choices or ()), "nope", "", "[1]")))


def set_texts() -> tuple[tuple[str, str], ...]:
    return tuple((kind, key) for kind, schema in SCHEMAS.items() for key in schema)


# --- cases --------------------------------------------------------------------------------------------------

OPTIONS = command_options(app)


def command_of(base: str) -> str:
    """The command a ``BASES`` line runs (``sweep --resume`` is a sweep)."""
    return base.partition(" --")[0]


def mutation(draw: Draw, command: str) -> tuple[tuple[str, ...], dict[str, str], str]:
    """One change to a command line: (extra argv, extra environment, what it changed)."""
    specs = [s for s in OPTIONS if s.command == command_of(command)]
    kind = draw.choose(("flag", "flag", "flag", "set", "set", "bare", "unknown", "env"))
    if kind == "set" and any(s.name == "--set" for s in specs):
        table, key = draw.choose(set_texts())
        side = draw.choose(("", "", "pe.", "de.", "xx.")) if table == "hardware" else ""
        return ("--set", f"{side}{key}={set_value(draw, table, key)}"), {}, f"--set {key}"
    if kind == "bare":
        name = draw.choose([s.name for s in specs if not s.positional and s.kind is not bool] or ["--json"])
        return (name,), {}, name
    if kind == "unknown":
        return (draw.choose(("--nope", "-x", "--json=1", "--", "extra")),), {}, "unknown"
    if kind == "env":
        env = draw.choose(({"COLUMNS": "0"}, {"COLUMNS": "1"}, {"COLUMNS": "100000"}, {"DUALPATH_PLAN_PROFILES": "envdir"}))
        return (), env, f"env {next(iter(env))}"
    spec = draw.choose([s for s in specs if not s.positional])
    if spec.kind is bool:
        return (spec.name,), {}, spec.name
    return (spec.name, flag_value(draw, spec)), {}, spec.name


def make_case(draw: Draw, allow_disturb: bool = True) -> Case:
    command = draw.choose(tuple(BASES))
    argv, env, changes = list(BASES[command]), {}, []
    if command == "profiles show" and draw.integer(0, 2) == 0:
        argv[-1] = str(draw.choose(NAMES["NAME"]))
        changes.append("NAME")
    if command in TRACE_INPUTS and draw.integer(0, 2) == 0:  # the trace a command reads, by its position
        at, metavar = TRACE_INPUTS[command]
        argv[at] = str(draw.choose(TRACES))
        changes.append(metavar)
    for _ in range(draw.integer(1, 3)):
        extra, more, what = mutation(draw, command)
        argv += extra
        env |= more
        changes.append(what)
    if command == "sweep --executor ray" and draw.integer(0, 3) == 0:  # a stale RAY_ADDRESS behind --address auto
        argv[-1], env = "auto", env | {"RAY_ADDRESS": str(draw.choose(NAMES["--address"]))}
        changes.append("env RAY_ADDRESS")
    journal = str(draw.choose(tuple(JOURNALS))) if command == "sweep --resume" else None
    disturb = draw.choose((None,) * 27 + ("pipe", "TERM", "KILL")) if allow_disturb else None
    if disturb in ("TERM", "KILL"):  # a kill needs a run long enough to catch, writing a file: one sweep, the changes dropped
        command, argv, changes, env, journal = "sweep", [*BASES["sweep"], "--gpus", "20000", "--csv", "killed.csv"], [], {}, None
    return Case(command, tuple(argv), env, disturb, draw.integer(2, 30) / 10, tuple(changes), journal)


def cases(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    draw = Draw.seeded(rng)
    return [make_case(draw) for _ in range(count)]


# --- fixtures -----------------------------------------------------------------------------------------------

def prepare(folder: Path) -> Path:
    """The hostile files every case refers to by name, in ``folder`` (its working directory)."""
    hopper = (ROOT / "hardware_profiles" / "hopper.toml").read_text()
    files = {
        "fuzzgood.toml": hopper,
        "nested.toml": "x = " + "[" * 2000 + "]" * 2000 + "\n",
        "digits.toml": hopper + "\nsnic_Gbps = " + "9" * 5000 + "\n",
        "big.toml": "# " + "x" * (2 << 20) + "\n",
        "empty.toml": "",
        "good.jsonl": (ROOT / "examples" / "trace-example.jsonl").read_text(),
        "v2.jsonl": (ROOT / "examples" / "trace-v2-example.jsonl").read_text(),
        "mooncake.jsonl": (ROOT / "tests" / "fixtures" / "traces" / "mooncake" / "conversation_trace_excerpt.jsonl").read_text(),
        "nested.jsonl": "[" * 2000 + "]" * 2000 + "\n",
        "digits.jsonl": "[[" + "9" * 5000 + ", 1]]\n",
        "huge.jsonl": "[[2147483647, 2147483647]]\n",
        "negative.jsonl": "[[-5, 1], [3, 0]]\n",
        "words.jsonl": "hello\n{\"append_tokens\": \"x\"}\n",
        "empty.jsonl": "",
        "measurements.csv": (ROOT / "examples" / "calibration.csv").read_text(),
        "bad.csv": "op,dtype,shape,tokens,ep_size,path,context,latency_us\ngemm,fp8,4096x7168,64,1,-,0,12us\n",
        "scenario.toml": 'profiles = ["hopper", "blackwell"]\nnodes = "6..12:3"\n',
        "deepkey.toml": 'profiles = ["hopper"]\nnodes = [6]\n' + ".".join(["a"] * 1500) + " = 1\n",
        "unicode.toml": 'profiles = ["hopper"]\nnodes = "٦..٧"\n',
        "underscore.toml": 'profiles = ["hopper"]\nnodes = "6_0..7_0"\n',
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "binary.toml").write_bytes(bytes(range(256)) * 64)
    (folder / "folder.toml").mkdir()
    for name in ("fifo.toml", "fifo.jsonl", "fifo.csv"):
        os.mkfifo(folder / name)
    (folder / "envdir").mkdir()
    (folder / "envdir" / "broken.toml").write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    return folder


def leftovers(folder: Path, before: set[str]) -> list[str]:
    """Temporary files anywhere in ``folder``, and files that were not there before the run."""
    now = {str(p.relative_to(folder)) for p in folder.rglob("*")}
    return sorted(n for n in now - before if not n.startswith("envdir"))


# --- running ------------------------------------------------------------------------------------------------

def classify(code: int | None, out: str, err: str, disturb: str | None) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    if code is None:
        return "hang"
    if "Traceback" in err:
        return "traceback"
    if disturb in ("TERM", "KILL") and code in (-signal.SIGKILL, -signal.SIGTERM, 128 + signal.SIGTERM) and not lines:
        return "killed"
    if code == 0 or (code in (141, -signal.SIGPIPE) and disturb == "pipe" and not lines):
        return "ok"
    if code in (1, 2) and len(lines) == 1 and not out:
        return "clean error"
    if code in (1, 2):
        return "silent" if not lines else "multi-line"
    return "silent" if not lines else "other"


def _run(case: Case, folder: Path, timeout_s: float) -> tuple[int | None, str, str]:
    env = {**os.environ, **{k: str(folder / v) if k == "DUALPATH_PLAN_PROFILES" else v for k, v in case.env.items()}}
    argv = [sys.executable, "-m", "dualpath_plan", *case.argv]
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if case.disturb == "pipe":
            proc.stdout.readline()
            proc.stdout.close()
            proc.wait(timeout_s)
            return proc.returncode, "", proc.stderr.read()
        if case.disturb in ("TERM", "KILL"):
            time.sleep(case.delay_s)
            proc.send_signal(signal.SIGTERM if case.disturb == "TERM" else signal.SIGKILL)
        out, err = proc.communicate(timeout=timeout_s)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, "", ""


def lay_journal(folder: Path, name: str | None) -> None:
    """``resumed.csv.partial`` as the ``JOURNALS`` entry ``name`` has it (removed first; nothing for None)."""
    path = folder / "resumed.csv.partial"
    for old in (path, folder / "resumed.csv"):
        old.unlink(missing_ok=True)
    if name is None:
        return
    what = JOURNALS[name]
    if what == "FIFO":
        os.mkfifo(path)
    elif what.startswith("LINK:"):
        path.symlink_to(what.removeprefix("LINK:"))
    elif what == "BINARY":
        path.write_bytes(bytes(range(256)) * 16)
    else:
        path.write_text(what)


def run_case(case: Case, folder: Path, timeout_s: float) -> tuple[str, list[str], str]:
    """(class, files left behind, the first stderr line) of one case, in its worker's ``folder``."""
    lay_journal(folder, case.journal)
    before = {str(p.relative_to(folder)) for p in folder.rglob("*")}
    code, out, err = _run(case, folder, timeout_s)
    if case.disturb == "KILL":  # a second run to the same target must remove the killed one's temporary file
        _run(Case("sweep", (*BASES["sweep"], "--csv", "killed.csv")), folder, timeout_s)
    left = [n for n in leftovers(folder, before) if Path(n).name.startswith(".") or (code != 0 and case.disturb is None)]
    if (folder / "nowhere.partial").exists():  # written through a dangling journal, whatever the exit: a finding
        left.append("nowhere.partial")
    for name in leftovers(folder, before):  # outputs of successful runs are removed, for the next case
        (folder / name).unlink(missing_ok=True)
    lay_journal(folder, None)
    return classify(code, out, err, case.disturb), left, (err.strip().splitlines() or [""])[0][:200]


def campaign(count: int, seed: int, jobs: int, timeout_s: float) -> tuple[Counter, list[tuple[Case, str, list[str], str]]]:
    todo = cases(count, seed)
    with tempfile.TemporaryDirectory(prefix="dualpath-fuzz-") as root:
        folders = [Path(root) / f"w{i}" for i in range(jobs)]  # one working directory per worker: leftovers stay apart
        for folder in folders:
            folder.mkdir()
            prepare(folder)

        def work(i: int):
            return [(case, *run_case(case, folders[i], timeout_s)) for case in todo[i::jobs]]
        with ThreadPoolExecutor(jobs) as pool:
            results = [r for part in pool.map(work, range(jobs)) for r in part]
    counts = Counter((case.label, cls) for case, cls, _, _ in results)
    return counts, results


def report(counts: Counter, results: list, seed: int, wall_s: float) -> str:
    commands = sorted({c for c, _ in counts})
    head = f"| command | {' | '.join(CLASSES)} | left files |\n|---|{'---|' * (len(CLASSES) + 1)}"
    left = Counter(case.label for case, _, files, _ in results if files)
    rows = [f"| {c} | {' | '.join(str(counts[(c, k)]) for k in CLASSES)} | {left[c]} |" for c in commands]
    total = f"| **all** | {' | '.join(str(sum(counts[(c, k)] for c in commands)) for k in CLASSES)} | {sum(left.values())} |"
    return "\n".join([f"{len(results)} invocations, seed {seed}, {wall_s:.0f} s", head, *rows, total])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    counts, results = campaign(args.count, args.seed, args.jobs, args.timeout_s)
    print(report(counts, results, args.seed, time.perf_counter() - start))
    bad = [(case, cls, files, line) for case, cls, files, line in results if cls not in ("ok", "clean error", "killed") or files]
    for case, cls, files, line in bad[:40]:
        print(f"{cls}: dualpath-plan {' '.join(case.argv)} {case.env or ''} {case.disturb or ''} -> {line!r} {files or ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
