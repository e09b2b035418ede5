"""``dualpath-plan calibrate``: fit a hardware profile's step-time tables to measurements and write the profile.

The measurements are the user's CSV (``measurements``) or AIConfigurator's database (``aiconfigurator``); ``base``
is the hardware profile whose other fields (NICs, DRAM, HBM, peaks, prices) the new profile keeps and whose
datasheet the rows are screened against. ``families`` chooses which tables to fit (``fits.FAMILIES``); every other
table keeps the base's values and sources. The profile text is checked by loading it strictly before anyone writes
it (the CLI writes it atomically).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from dualpath_plan.calibration import aiconfigurator, fits
from dualpath_plan.calibration.measurements import read_csv
from dualpath_plan.calibration.profile_text import profile_text
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.profiles import Catalog, Hardware, load_file
from dualpath_plan.model.schema import did_you_mean

POLICIES = ("refuse", "keep", "drop")
# AIConfigurator system -> the shipped profile of that node (the default base of --from aiconfigurator)
SYSTEM_BASE = {"h100_sxm": "h100-dgx", "h200_sxm": "h200", "b200_sxm": "blackwell", "b300_sxm": "blackwell-ultra", "gb200": "gb200",
               "gb300": "gb300", "a100_sxm": "ampere"}


@dataclass(frozen=True)
class Calibration:
    """The fitted values (file units), one report per fitted table, where each table's rows came from, and the
    profile's text.

    What :func:`dualpath_plan.calibrate` returns; nothing is written.

    Attributes:
        base: The hardware profile whose other values the new profile keeps (``model.profiles.Hardware``, SI).
        fit: The fitted values and their reports (:class:`~dualpath_plan.calibration.fits.Fit`).
        origins: Per fitted table, where its rows came from (the database, system, backend and version, or the CSV).
        text: The new profile, TOML text, checked by loading it strictly.
    """

    base: Hardware
    fit: fits.Fit
    origins: dict[str, str]
    text: str

    @property
    def reports(self) -> tuple[fits.Report, ...]:
        return self.fit.reports


def check_families(families: tuple[str, ...]) -> tuple[str, ...]:
    bad = [f for f in families if f not in fits.FAMILIES]
    if bad or not families:
        near = did_you_mean(bad[0], fits.FAMILIES) if bad else ""
        raise PlanError(f"--ops {','.join(families)!r}: {bad[0] if bad else '(none)'}{near} is not a table family; families: {', '.join(fits.FAMILIES)}", 2)
    return families


def check_policy(keep: bool, drop: bool) -> str:
    if keep and drop:
        raise PlanError("--keep-implausible and --drop-implausible: give at most one (keep a row faster than the datasheet, or leave it out)", 2)
    return "keep" if keep else "drop" if drop else "refuse"


def _db_origins(system: str, backend: str, sources: tuple[aiconfigurator.Source, ...], fit: fits.Fit, note: str) -> dict[str, str]:
    version = aiconfigurator.package_version()
    out = {}
    for report in fit.reports:
        mine = [s for s in sources if report.table.startswith(s.what)]
        tables = " and ".join(f"{s.table} ({s.version}, {s.rows} rows)" for s in mine)
        out[report.table] = f"AIConfigurator (aiconfigurator-core {version}) {system}, {backend}: {tables}" + (f" ({note})" if note else "")
    return out


def from_database(base: Hardware, system: str, backend: str = "sglang", version: str | None = None,
                  families: tuple[str, ...] = fits.FAMILIES, policy: str = "refuse", note: str = "", keep: tuple[str, ...] = ()) -> Calibration:
    """The profile ``base`` with the tables ``families`` fitted to AIConfigurator's measurements of ``system`` on
    ``backend``; ``note`` (why these measurements serve this node) joins each fitted key's source; the keys
    ``keep`` names keep the base's values and sources (the node's own measurement of them)."""
    families = check_families(families)
    rows, sources = aiconfigurator.load(system, backend, version, base.g, families)
    fit = fits.fit_all(rows, base, families, policy).without(keep)
    return _finish(base, fit, _db_origins(system, backend, sources, fit, note))


def from_csv(base: Hardware, path: Path, families: tuple[str, ...] = fits.FAMILIES, policy: str = "refuse") -> Calibration:
    """The profile ``base`` with the tables ``families`` fitted to the measurements of the CSV at ``path``."""
    rows = read_csv(Path(path))
    fit = fits.fit_all(rows, base, check_families(families), policy)
    return _finish(base, fit, {r.table: f"{Path(path).name} (measurements given by the user)" for r in fit.reports})


def _finish(base: Hardware, fit: fits.Fit, origins: dict[str, str]) -> Calibration:
    text = profile_text(Path(base.path), fit, origins)
    with tempfile.TemporaryDirectory() as folder:  # the text must load as strictly as any profile
        probe = Path(folder) / f"{base.name}.toml"
        probe.write_text(text)
        try:
            load_file(probe)
        except PlanError as exc:
            raise PlanError(f"the fitted tables make a profile that does not load: {str(exc).replace(str(probe), base.name)}", 1) from None
    return Calibration(base, fit, origins, text)


def calibrate_request(cat: Catalog, source: str | Path, *, base: str | None = None, system: str | None = None, backend: str | None = None,
                      version: str | None = None, ops=None, keep_implausible: bool = False, drop_implausible: bool = False) -> Calibration:
    """``calibrate``'s flags checked and run: ``source`` is ``"aiconfigurator"`` (with ``system``; ``base`` defaults to
    that system's shipped profile) or a CSV path (with ``base``; ``system``, ``backend`` and ``version`` refused)."""
    policy = check_policy(keep_implausible, drop_implausible)
    families = check_families(tuple(ops)) if ops is not None else fits.FAMILIES
    if str(source) == "aiconfigurator":
        if system is None or system not in aiconfigurator.systems():
            given = "needs --system" if system is None else f"--system {system!r} is not in aiconfigurator-core {aiconfigurator.package_version()}"
            raise PlanError(f"--from aiconfigurator {given}; systems: {', '.join(aiconfigurator.systems())}", 2)
        name = base or SYSTEM_BASE.get(system)
        if name is None:
            raise PlanError(f"--system {system} has no shipped profile to start from; give --base NAME (the hardware profile whose NICs, "
                            "DRAM and datasheet the system has)", 2)
        return from_database(cat.get("hardware", name), system, backend or "sglang", version, families, policy)
    for flag, value in (("--system", system), ("--backend", backend), ("--version", version)):
        if value is not None:
            raise PlanError(f"{flag} {value}: only with --from aiconfigurator (a CSV names its own measurements)", 2)
    if base is None:
        raise PlanError(f"--from {source} needs --base NAME: the hardware profile of the node you measured (its NICs, DRAM, HBM and peaks)", 2)
    return from_csv(cat.get("hardware", base), Path(source), families, policy)
