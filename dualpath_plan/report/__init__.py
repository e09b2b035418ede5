"""Rendering: rich tables for people, plain dicts for ``--json``. Every number goes through
:func:`dualpath_plan.model.fmt.fmt`, the one formatter, so every printed number has its unit."""
