"""Every command's options and arguments, read from the commands' own annotations.

The range table's completeness test (every numeric flag has a range) and the command-line fuzz harness
(``tools/fuzz_cli.py``: every command, flag and profile field) walk this list, so neither can miss a flag a
command gains later. The annotations are read, not typer's click objects, so the list is the same whichever
click a typer release bundles.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path

import typer
from typer.models import ArgumentInfo, OptionInfo


@dataclass(frozen=True)
class OptionSpec:
    """One option (``name`` as typed: ``--nodes``, ``-P``) or positional argument (``name`` is its metavar)
    of ``command`` (``plan``, ``profiles show``). ``kind`` is int, float, str, bool or Path."""

    command: str
    name: str
    kind: type
    repeatable: bool
    positional: bool = False


def command_options(app: typer.Typer) -> tuple[OptionSpec, ...]:
    """Every option and argument of every command of ``app`` (sub-apps included)."""
    return tuple(spec for command, callback in _commands(app, "") for spec in _specs(command, callback))


def _commands(app: typer.Typer, prefix: str):
    for info in app.registered_commands:
        yield f"{prefix}{info.name or info.callback.__name__.replace('_', '-')}", info.callback
    for group in app.registered_groups:
        yield from _commands(group.typer_instance, f"{prefix}{group.name} ")


def _specs(command: str, callback) -> typing.Iterator[OptionSpec]:
    for param, hint in typing.get_type_hints(callback, include_extras=True).items():
        if param == "return":
            continue
        base, repeatable = _base(typing.get_args(hint)[0] if hasattr(hint, "__metadata__") else hint)
        for info in getattr(hint, "__metadata__", ()):
            if isinstance(info, OptionInfo):
                # typer.Option("--nodes", ...) inside Annotated: the first name lands in ``default``
                names = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str) and d.startswith("-")]
                yield OptionSpec(command, max(names, key=len), base, repeatable)
            elif isinstance(info, ArgumentInfo):
                yield OptionSpec(command, info.metavar or param.upper(), base, repeatable, positional=True)


def _base(annotation) -> tuple[type, bool]:
    """The value type inside ``Optional[...]`` / ``list[...]``, and whether the option repeats."""
    origin, args = typing.get_origin(annotation), [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and args:
        return _base(args[0])
    if origin is list and args:
        return _base(args[0])[0], True
    return (Path if annotation is Path else annotation), False
