"""The package's layers: every import points down (docs/architecture.md).

The imports are read from the source (AST), function-level ones included, so a lazy import cannot
hide an upward dependency. A failure names the file, the line and the import.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dualpath_plan"

# Lowest first: a module may import its own layer and the layers before it, never one after it.
LAYERS = (
    ("model", ("dualpath_plan.model",)),
    ("bounds", ("dualpath_plan.bounds",)),
    ("calibration", ("dualpath_plan.calibration",)),
    ("sim shared", ("dualpath_plan.sim.layout", "dualpath_plan.sim.pipes",
                    "dualpath_plan.sim.rules", "dualpath_plan.sim.metrics", "dualpath_plan.sim.bound", "dualpath_plan.sim")),
    ("sim engines", ("dualpath_plan.sim.python", "dualpath_plan.sim.compiled")),
    ("sim runner", ("dualpath_plan.sim.runner", "dualpath_plan.sim.spread", "dualpath_plan.sim.gap")),
    ("planning", ("dualpath_plan.planning",)),
    ("validation", ("dualpath_plan.validation",)),
    ("report", ("dualpath_plan.report",)),
    ("api", ("dualpath_plan.api", "dualpath_plan")),
    ("cli", ("dualpath_plan.cli",)),
    ("entry points", ("dualpath_plan.console", "dualpath_plan.__main__")),
)
# The twin engines sit in one layer but must not import each other: each is the other's check.
TWINS = ("dualpath_plan.sim.python", "dualpath_plan.sim.compiled")


def _inside(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """The layer of a module: the one whose most specific prefix it falls under."""
    best = max(((len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes if _inside(module, p)), default=None)
    if best is None:
        raise KeyError(module)
    return best[1]


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def _tree(text: str, name: str) -> ast.AST:
    """A module's syntax tree, parsed once per text (the planted copies below differ from the package in one file)."""
    return ast.parse(text, name)


def _imports(tree: ast.AST, package: Path) -> list[tuple[int, str, str]]:
    """(line, imported module, as written) for every import of the package: ``from dualpath_plan.x
    import y`` counts as ``dualpath_plan.x.y`` when ``y`` is a module, else as ``dualpath_plan.x``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, f"import {a.name}") for a in node.names if _inside(a.name, "dualpath_plan")]
        elif isinstance(node, ast.ImportFrom) and node.module and _inside(node.module, "dualpath_plan"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                is_module = (package.parent / Path(*sub.split("."))).with_suffix(".py").exists() or \
                    (package.parent / Path(*sub.split(".")) / "__init__.py").exists()
                out.append((node.lineno, sub if is_module else node.module, f"from {node.module} import {a.name}"))
    return out


def violations(package: Path = PACKAGE) -> list[str]:
    """Every import that points up a layer, or from one twin engine into the other."""
    found = []
    for path in sorted(package.rglob("*.py")):
        here = _module_name(path, package)
        for line, target, text in _imports(_tree(path.read_text(), path.name), package):
            where = f"{path.relative_to(package.parent)}:{line}: {text}"
            if layer_of(target) > layer_of(here):
                found.append(f"{where} ({LAYERS[layer_of(here)][0]} imports {LAYERS[layer_of(target)][0]}, a layer above it)")
            twin = [t for t in TWINS if _inside(here, t)]
            if twin and any(_inside(target, t) for t in TWINS if t != twin[0]):
                found.append(f"{where} (one engine imports the other twin)")
    return found


@pytest.mark.slow
def test_every_import_points_down():
    assert violations() == []


def test_every_module_has_a_layer():
    modules = [_module_name(p, PACKAGE) for p in PACKAGE.rglob("*.py")]
    for module in modules:
        layer_of(module)  # raises KeyError for a module outside every layer


@pytest.mark.slow
def test_nothing_outside_the_cli_imports_it():
    entry = ("dualpath_plan.cli", "dualpath_plan.console", "dualpath_plan.__main__")
    for path in PACKAGE.rglob("*.py"):
        here = _module_name(path, PACKAGE)
        if any(_inside(here, e) for e in entry):
            continue
        for line, target, text in _imports(_tree(path.read_text(), path.name), PACKAGE):
            assert not _inside(target, "dualpath_plan.cli"), f"{path.relative_to(PACKAGE.parent)}:{line}: {text}"


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "dualpath_plan"
    for path in PACKAGE.rglob("*.py"):
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    return copy


@pytest.mark.parametrize("module, line, layer", [
    ("bounds/lp.py", "from dualpath_plan.report.bounds import price_json", "bounds imports report"),
    ("model/units.py", "from dualpath_plan.planning import sweep", "model imports planning"),
    ("sim/layout.py", "import dualpath_plan.sim.runner", "sim shared imports sim runner"),
    ("report/bounds.py", "from dualpath_plan.cli.app import app", "report imports cli"),
])
@pytest.mark.slow
def test_a_planted_upward_import_is_named(tmp_path, module, line, layer):
    copy = _copy(tmp_path)
    planted = copy / module
    planted.write_text(planted.read_text() + f"\n\ndef _planted():\n    {line}\n")  # a lazy import counts too
    found = violations(copy)
    assert len(found) == 1 and found[0].startswith(f"dualpath_plan/{module}:") and line in found[0] and layer in found[0]


@pytest.mark.slow
def test_one_twin_importing_the_other_is_named(tmp_path):
    copy = _copy(tmp_path)
    (copy / "sim" / "compiled" / "loop.py").write_text("from dualpath_plan.sim.python.share import allocate\n")
    assert violations(copy) == ["dualpath_plan/sim/compiled/loop.py:1: from dualpath_plan.sim.python.share import allocate "
                                "(one engine imports the other twin)"]
