"""Regenerate the step-time tables of every shipped hardware profile AIConfigurator's database covers.

Each profile in ``dualpath_plan.calibration.shipped.RECIPES`` is rewritten in place from its own file: the
recipe's tables fitted by ``dualpath-plan calibrate``'s code onto it, everything else kept. Running it again
changes nothing (``tests/calibration/test_shipped.py`` checks the shipped files byte for byte). Needs the
'calibrate' extra (aiconfigurator-core 0.12.0).

Run: python tools/regen_profiles.py [--check]   (--check: report which files would change, write nothing; exit 1 if any)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dualpath_plan.calibration.shipped import RECIPES, regenerate
from dualpath_plan.model.profiles import load_file

ROOT = Path(__file__).resolve().parents[1] / "hardware_profiles"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = parser.parse_args()
    changed = []
    for name, recipe in RECIPES.items():
        path = ROOT / f"{name}.toml"
        text, steps = regenerate(load_file(path), recipe)
        worst = max(abs(r.mape_fit) for step in steps for r in step.reports)
        if path.read_text() != text:
            changed.append(name)
            if not args.check:
                path.write_text(text)
        print(f"{name:16} {'changed' if name in changed else 'same':8} {sum(len(s.reports) for s in steps)} tables, worst fit error {100 * worst:.1f} %")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
