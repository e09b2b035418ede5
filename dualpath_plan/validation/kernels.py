"""``validate --kernels``: how each shipped profile's fitted step-time tables meet AIConfigurator's measurements.

For every profile of ``calibration.shipped.RECIPES`` the recipe is fitted again from the database (the very fit
``tools/regen_profiles.py`` writes), and each table reports its error on the rows the fit used and on every fifth
row it held out. Nothing here sets a parameter; a large error is reported as it comes out. Needs the 'calibrate'
extra (aiconfigurator-core).
"""

from __future__ import annotations

from dualpath_plan.calibration.shipped import RECIPES, regenerate
from dualpath_plan.model.profiles import catalog
from dualpath_plan.validation.records import KernelFit


def kernel_fits() -> tuple[KernelFit, ...]:
    """One record per fitted table of every shipped profile the database covers."""
    cat = catalog()
    out = []
    for name, recipe in RECIPES.items():
        _, steps = regenerate(cat.get("hardware", name), recipe)
        for step in steps:
            for r in step.reports:
                out.append(KernelFit(name, r.table, step.origins[r.table], r.rows_fit, r.mape_fit, r.rows_held_out, r.mape_held_out,
                                     r.worst_where, r.worst_error))
    return tuple(out)
