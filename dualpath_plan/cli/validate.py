"""``dualpath-plan validate``: the paper's published figures next to ours, with the error of each."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated, Callable, Iterator

import typer

from dualpath_plan.cli.app import JsonOpt, app, err_console, out_console, print_json
from dualpath_plan.validation.records import DEFAULT_SEED  # the validation itself is imported when it runs

SkipSimOpt = Annotated[bool, typer.Option("--skip-sim", help="Leave out the rows that need the fluid simulator (slow).")]
SeedOpt = Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the simulator rows' trajectories and runs.")]


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, float, float], None] | None]:
    """A progress bar on stderr for the simulator runs (one task per policy)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("simulating {task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(policy: str, fraction: float, _sim_s: float) -> None:
            if policy not in tasks:
                tasks[policy] = bar.add_task(policy, total=1.0)
            bar.update(tasks[policy], completed=fraction)

        yield update


KernelsOpt = Annotated[bool, typer.Option("--kernels", help="Also fit every shipped profile's step-time tables to AIConfigurator's "
                                          "measurements again and show each table's error (the 'calibrate' extra; about 10 s).")]


@app.command()
def validate(skip_sim: SkipSimOpt = False, seed: SeedOpt = DEFAULT_SEED, kernels: KernelsOpt = False, json_: JsonOpt = False) -> None:
    """Compare the P/D range, Table 1's cache-compute ratios and the offline speed-up with the paper."""
    from dualpath_plan.report import validate as report
    from dualpath_plan.validation import ValidateOptions
    from dualpath_plan.validation import validate as run_validation

    with _progress(not skip_sim and err_console.is_terminal) as on_progress:  # no bar (nor its stray newline) off a terminal
        result = run_validation(skip_sim=skip_sim, options=ValidateOptions(seed=seed, on_progress=on_progress), kernels=kernels)
    if json_:
        print_json(report.to_json(result))
    else:
        report.render(result, out_console())
