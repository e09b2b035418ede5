"""Shared test set-up: the hypothesis ``ci`` profile (bounded, deterministic), a data-set cache of the suite's own
(so that a run neither reads nor fills the user's), and common fixtures."""

from __future__ import annotations

import os
import tempfile

from dualpath_plan.model import datacache

os.environ.setdefault(datacache.ENV_VAR, tempfile.mkdtemp(prefix="dualpath-plan-test-datasets-"))  # subprocesses inherit it

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
