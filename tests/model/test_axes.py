"""Sweep axes (model.axes): lists, ranges, --set axes and scenario files, and their refusals."""

from __future__ import annotations

import os
import re

import pytest

from dualpath_plan.model.axes import read_scenario, set_axis, spread_values
from dualpath_plan.model.errors import PlanError


@pytest.mark.parametrize("text, whole, values", [
    ("48", True, (48,)),
    ("6,12,24", True, (6, 12, 24)),
    ("6..10", True, (6, 7, 8, 9, 10)),
    ("400..800:3", False, (400, 600, 800)),
    ("0.9..0.99:4", False, (0.9, 0.93, 0.96, 0.99)),
    ("2e6,5e6", False, (2e6, 5e6)),
    ("7..7:1", True, (7,)),
])
def test_values_of_a_list_or_a_range(text, whole, values):
    got = spread_values("--x", text, whole)
    assert got == pytest.approx(values) and all(isinstance(v, int) for v in got) == all(isinstance(v, int) for v in values)


@pytest.mark.parametrize("text, whole, needle", [
    ("10..6", True, "below its start"),
    ("0.5..0.9", False, "steps by whole numbers"),
    ("1..100000", True, "an axis takes at most 10,000"),
    ("6,6", True, "names a value twice"),
    ("6,x", True, "'x' is not a number"),
    ("6.5", True, "must be a whole number"),
    ("1..2:0", False, "the count 0 is not allowed"),
    ("1..4:2", True, None),
    ("1..2:3", True, "are not whole numbers"),
    ("nan", False, "must be a finite number"),
    ("\u0666", True, "'\u0666' is not a number"),  # an Arabic-Indic six read as 6 before
    ("\uff11\uff12", True, "is not a number"),  # full-width 12
    ("6_0..7_0", True, "'6_0' is not a number"),  # read as 60..70 before
])
def test_bad_lists_and_ranges_are_refused_in_one_line(text, whole, needle):
    if needle is None:
        assert spread_values("--x", text, whole) == (1, 4)
        return
    with pytest.raises(PlanError, match=needle) as info:
        spread_values("--x", text, whole)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_a_set_axis_is_a_list_a_range_or_one_value():
    assert set_axis("snic_Gbps=400,800") == ("snic_Gbps", ("snic_Gbps=400", "snic_Gbps=800"))
    assert set_axis("hit_rate_frac=0.9..0.99:2") == ("hit_rate_frac", ("hit_rate_frac=0.9", "hit_rate_frac=0.99"))
    assert set_axis("pe.snic_Gbps=800") == ("pe.snic_Gbps", ("pe.snic_Gbps=800",))
    assert set_axis('kv_layout="a,b"') == ("kv_layout", ('kv_layout="a,b"',))  # a quoted text stays one value
    with pytest.raises(PlanError, match="an empty value"):
        set_axis("snic_Gbps=400,")


def test_a_scenario_file_gives_the_axes_as_the_flags_would(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('profiles = ["hopper", "blackwell"]\nworkloads = "agentic-32k"\nnodes = "6..8"\n'
                    '[set]\nsnic_Gbps = [400, 800]\nhit_rate_frac = "0.9..0.99:3"\n')
    got = read_scenario(path)
    assert got == {"profiles": ("hopper", "blackwell"), "workloads": ("agentic-32k",), "nodes": "6..8",
                   "set": ("snic_Gbps=400,800", "hit_rate_frac=0.9..0.99:3")}


@pytest.mark.parametrize("text, needle", [
    ("nodes = 6\ngpus = 48\n", "nodes and gpus are both given"),
    ("profile = 'hopper'\n", "key 'profile' is not allowed"),
    ("profiles = [1, 2]\n", "profiles must be a name or a list of names"),
    ("pairs = [['h20']]\n", "pairs must be a list of [PE profile, DE profile] pairs"),
    ("nodes = true\n", "nodes = True is not allowed"),
    ("[set]\nsnic_Gbps = {a = 1}\n", "set.snic_Gbps"),
    ("nodes = [\n", "not a TOML file"),
    ("set." + ".".join(["a"] * 1500) + " = 1\n", "set.a = {'a': {'a': {...}}} is not allowed"),  # a RecursionError before
])
def test_a_bad_scenario_file_is_refused_in_one_line(tmp_path, text, needle):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match=re.escape(needle)) as info:
        read_scenario(path)
    assert "\n" not in str(info.value)


def test_a_missing_scenario_file_is_refused(tmp_path):
    with pytest.raises(PlanError, match="--scenario .*none.toml: scenario file not found"):
        read_scenario(tmp_path / "none.toml")
    (tmp_path / "fifo").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PlanError, match="is not a regular file"):  # not read: it would wait for a writer forever
        read_scenario(tmp_path / "fifo")


@pytest.mark.parametrize("text, needle", [
    ("nodes = " + "[" * 3000 + "]" * 3000 + "\n", "nested more than"),
    ("nodes = " + "9" * 5000 + "\n", "a number of more than"),
])
def test_a_hostile_scenario_file_is_one_line(tmp_path, text, needle):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match=needle):
        read_scenario(path)


def test_pe_and_de_keys_under_set_are_one_sides_axes(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[set]\npe.snic_Gbps = [400, 800]\nde.dram_GBps = 300\n")
    assert read_scenario(path)["set"] == ("pe.snic_Gbps=400,800", "de.dram_GBps=300")
