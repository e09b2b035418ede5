"""model/trace/ops.py: which files a trace directory stands for."""

from __future__ import annotations

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.trace import ops


def test_a_directory_stands_for_its_data_files_not_its_documentation(tmp_path):
    """A repository's trace folder ships a README, a LICENSE or notes beside the data; they are no trace of any format
    and are left out, as hidden files are. A file named on its own is read whatever its name."""
    for name in ("trace_0002.json", "trace_0001.json", "README.md", "LICENSE", "SOURCE.md", "notes.txt", "plot.png", ".hidden.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in ops.expand([tmp_path])] == ["trace_0001.json", "trace_0002.json"]
    assert ops.expand([tmp_path / "README.md"]) == [tmp_path / "README.md"]


def test_a_directory_of_documentation_only_holds_no_trace(tmp_path):
    (tmp_path / "README.md").write_text("traces: see the release page")
    with pytest.raises(PlanError, match="the directory holds no trace file"):
        ops.expand([tmp_path])
