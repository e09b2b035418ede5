"""The command line: typer commands that only parse, call the library and render.

Each command lives in its own module and registers itself on :data:`app`. :func:`main` is the
console script: it turns every :class:`~dualpath_plan.model.errors.PlanError` and usage error into one
line on stderr with exit code 1 (domain) or 2 (usage), never a traceback. A stdout whose reader went away
(``... | head -1``) ends the command quietly with 141 (``app.closed_pipe``).
"""

from __future__ import annotations

import importlib
import sys

import typer

from dualpath_plan.cli.app import ClosedPipe, app, closed_pipe, err_console
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.fmt import has

# Importing a command module registers its command on ``app``.
from dualpath_plan.cli import bottleneck as _bottleneck  # noqa: E402,F401
from dualpath_plan.cli import calibrate as _calibrate  # noqa: E402,F401
from dualpath_plan.cli import compare as _compare  # noqa: E402,F401
from dualpath_plan.cli import formulas as _formulas  # noqa: E402,F401
from dualpath_plan.cli import plan as _plan  # noqa: E402,F401
from dualpath_plan.cli import profiles as _profiles  # noqa: E402,F401
from dualpath_plan.cli import simulate as _simulate  # noqa: E402,F401
from dualpath_plan.cli import sweep as _sweep  # noqa: E402,F401
from dualpath_plan.cli import trace as _trace  # noqa: E402,F401
from dualpath_plan.cli import validate as _validate  # noqa: E402,F401

__all__ = ["app", "main"]


def _click_classes(*names: str) -> tuple[type[BaseException], ...]:
    """Exception classes of the click that typer uses (vendored in newer typer, plain click before)."""
    found: list[type[BaseException]] = []
    for module_name in ("typer._click.exceptions", "click.exceptions"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.extend(getattr(module, name) for name in names if hasattr(module, name))
    return tuple(found)


_NO_ARGS = _click_classes("NoArgsIsHelpError", "NoArgsIsHelp")
_USAGE = _click_classes("UsageError")
_CLICK = _click_classes("ClickException")


LONGEST_WORD = 240  # characters of one word of an error line shown whole (a long path is); longer (a typed value) is cut in the middle


def _one_line(text: str) -> str:
    """``text`` on one line, each word longer than :data:`LONGEST_WORD` characters cut to its ends with the count left
    out: a refusal that echoes a 100,000-digit value stays a line a reader can use."""
    return " ".join(_cut(word) for word in str(text).split())


def _cut(word: str) -> str:
    if len(word) <= LONGEST_WORD:
        return word
    keep = LONGEST_WORD // 2 - 10
    return f"{word[:keep]}...[{len(word) - 2 * keep:,} characters]...{word[-keep:]}"


def _given_value(exc: BaseException, argv: list[str]) -> str | None:
    """The value the user typed for the option a click error is about (``None`` if not found); of an
    option given more than once, the last (the one click parses)."""
    opts = getattr(getattr(exc, "param", None), "opts", ())
    given = None
    for i, arg in enumerate(argv):
        for opt in opts:
            if arg == opt and i + 1 < len(argv):
                given = argv[i + 1]
            elif arg.startswith(f"{opt}="):
                given = arg.partition("=")[2]
    return given


# What typer's value parsing says when a number does not parse, and what the option needs instead.
_NOT_A_NUMBER = (("valid integer", "a whole number"), ("as an integer", "a whole number"), ("valid number", "a number"))


def _usage_line(exc: BaseException, argv: list[str]) -> str:
    """One line for a usage error, naming the option, the value typed and what it must be."""
    message, given = _one_line(exc.format_message()), _given_value(exc, argv)
    param = getattr(exc, "param", None)
    for needle, kind in _NOT_A_NUMBER:
        if needle in message and given is not None and getattr(param, "opts", None):
            metavar = getattr(param, "metavar", None)
            return f"{param.opts[0]} = {given!r} is not allowed; must be {kind}" + (f" ({metavar})" if metavar else "")
    if (elsewhere := _option_elsewhere(exc)) is not None:
        return elsewhere
    return message + ("" if given is None or repr(given) in message else f" (got {given!r})")


def _option_elsewhere(exc: BaseException) -> str | None:
    """For an option the command does not have but other commands do (``simulate --check``): which ones have it."""
    name, ctx = getattr(exc, "option_name", None), getattr(exc, "ctx", None)
    if not name or ctx is None or ctx.command is None or getattr(ctx.command, "commands", None) or " " not in ctx.command_path:
        return None  # the top level or a group (dualpath-plan --check): click's own line names no command
    path = ctx.command_path.split(" ", 1)[1]
    owners = sorted(p for p, command in _commands(typer.main.get_command(app)) if p != path
                    and any(name in param.opts for param in command.params))
    if not owners:
        return None
    return f"{path} has no option {name}; {', '.join(owners)} {has(owners)} it (see dualpath-plan {path} --help)"


def _commands(group, prefix: str = ""):
    """(command path, command) of every leaf command under ``group``."""
    for key, command in getattr(group, "commands", {}).items():
        path = f"{prefix}{key}"
        if getattr(command, "commands", None):
            yield from _commands(command, f"{path} ")
        else:
            yield path, command


def _error(text: str) -> None:
    """The one line on stderr that every refusal ends in."""
    err_console.print(f"error: {_one_line(text)}", markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 1 domain error, 2 usage error, 130 interrupted, 141 stdout's reader
    went away: ``app.closed_pipe``)."""
    try:
        result = app(args=argv, prog_name="dualpath-plan", standalone_mode=False)
    except PlanError as exc:
        _error(str(exc))
        return exc.exit_code
    except _NO_ARGS as exc:
        try:
            sys.stdout.write(exc.format_message() + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            return closed_pipe()
        _error("give a command (the help above lists them)")  # exit 2 says why
        return 2
    except _USAGE as exc:
        _error(_usage_line(exc, sys.argv[1:] if argv is None else argv))
        return 2
    except _CLICK as exc:
        _error(exc.format_message())
        return 1
    except typer.Abort:
        _error("aborted")
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except MemoryError:
        _error("out of memory; use fewer agents, nodes or splits")
        return 1
    except (ClosedPipe, BrokenPipeError):
        return closed_pipe()
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click met the closed pipe (its help, echo) and exits 1
            return closed_pipe()
        raise
    except OSError as exc:
        _error(str(exc))
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
