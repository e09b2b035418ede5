"""Strict profile loading (profiles.py, schema.py): shipped files, user files, overrides."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from pathlib import Path

import pytest

from dualpath_plan.model import profiles
from dualpath_plan.model.errors import PlanError

HOPPER_LINES = (Path(__file__).resolve().parents[2] / "hardware_profiles" / "hopper.toml").read_text()
REQUIRED_HARDWARE = {"hopper", "h100-dgx", "h200", "h20", "ampere", "blackwell", "blackwell-ultra", "gb200", "gb300", "mi300x"}
REQUIRED_MODELS = {"ds-v3.2", "ds-27b", "qwen2.5-32b", "qwen3-32b", "qwen3-235b-a22b", "llama-3.1-70b", "llama-3.1-8b", "gpt-oss-120b", "kimi-k2"}
REQUIRED_WORKLOADS = {"agentic-32k", "agentic-48k", "agentic-64k"}


def _numbers(profile):
    for f in fields(profile):
        value = getattr(profile, f.name)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            yield f.name, value
        elif isinstance(value, dict):
            yield from ((f"{f.name}.{k}", v) for k, v in value.items())


def _all_shipped():
    cat = profiles.catalog()
    return [(kind, name) for kind in profiles.KINDS for name in cat.names(kind)]


def test_required_profiles_are_shipped():
    cat = profiles.catalog()
    assert REQUIRED_HARDWARE <= set(cat.names("hardware"))
    assert REQUIRED_MODELS <= set(cat.names("model"))
    assert REQUIRED_WORKLOADS <= set(cat.names("workload"))


@pytest.mark.parametrize("kind,name", _all_shipped())
def test_every_shipped_profile_loads_finite_and_cites_sources(kind, name):
    profile = profiles.catalog().get(kind, name)
    sources = dict(profile.sources)
    by_attr = {f.attr: f for f in profiles.SCHEMAS[kind].values()}
    for key, value in _numbers(profile):
        field = by_attr.get(key.split(".")[0])
        allowed_zero = field is not None and field.allow_zero
        assert math.isfinite(value) and (value > 0 or (allowed_zero and value == 0)), (key, value)
    for key, field in profiles.SCHEMAS[kind].items():
        if field.kind != "str" and getattr(profile, field.attr) is not None:
            assert key in sources or any(s.startswith(f"{key}.") for s in sources), f"{name}: no source for {key}"


def test_hopper_is_the_papers_node():
    hw = profiles.catalog().get("hardware", "hopper")
    assert (hw.g, hw.B, hw.s, hw.M) == (8, 5.0e10, 1.0, 5.0e11)


def _write(tmp_path: Path, text: str, name: str = "mine") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "old,new,expect",
    [
        ("snic_Gbps = 400", "snic_Gbps = 0.0", "snic_Gbps = 0.0 Gb/s"),
        ("snic_Gbps = 400", "snic_Gbps = -400.0", "must be a finite number >= 1 and <= 102400"),
        ("snic_Gbps = 400", "snic_Gbps = nan", "snic_Gbps = nan"),
        ("snic_Gbps = 400", "snic_Gbps = inf", "snic_Gbps = inf"),
        ("gpus_per_node = 8", 'gpus_per_node = "eight"', "must be a whole number"),
        ("gpus_per_node = 8", "gpus_per_node = 7.5", "must be a whole number"),
        ("snic_Gbps = 400", "snic_Gbps = 400.0\nsnic_gbps = 1.0", "unknown key"),
        ("snic_Gbps = 400\n", "", "missing required keys: snic_Gbps (Gbps)"),
        ("attn_frac = 0.5673", "attn_frac = 1.5", "<= 1"),
        ("fp8_dense_TFLOPS = 1979", "fp8_dense_TFLOPS = 1979\nfp4_dense_TFLOPS = 1000", "must be >= fp8_dense_TFLOPS = 1979"),
        ('kind = "hardware"', 'kind = "gpu"', "must be one of hardware, model, workload"),
        ('ep_normal_GBps = { "16" = 310.7,', 'ep_normal_GBps = { "sixteen" = 310.7,', "must be keyed by whole numbers >= 1 (EP sizes"),
        ('ep_normal_GBps = { "16" = 310.7,', 'ep_normal_GBps = { "16" = -1,', "ep_normal_GBps.16 = -1"),
        ('ep_normal_GBps = { "16" = 310.7, "32" = 139.4, "64" = 66.47 }', 'ep_normal_GBps = "fast"', "must be a finite number or a table"),
        ("ep_normal_nvlink_GBps = 153", "ep_normal_nvlink_GBps = 0", "ep_normal_nvlink_GBps = 0"),
    ],
)
def test_bad_values_are_refused_with_file_key_value_and_rule(tmp_path, old, new, expect):
    path = _write(tmp_path, HOPPER_LINES.replace(old, new, 1))
    with pytest.raises(PlanError) as info:
        profiles.load_file(path)
    message = str(info.value)
    assert str(path) in message and expect in message and "\n" not in message
    assert info.value.exit_code == 2


def test_invalid_toml_is_one_line(tmp_path):
    with pytest.raises(PlanError, match="not valid TOML"):
        profiles.load_file(_write(tmp_path, "gpus_per_node = [1,"))


def test_unknown_name_lists_known_names():
    with pytest.raises(PlanError) as info:
        profiles.catalog().get("hardware", "hoper")
    assert "hopper" in str(info.value) and "blackwell" in str(info.value)


def test_profile_file_adds_a_profile_named_by_its_stem(tmp_path):
    path = _write(tmp_path, HOPPER_LINES.replace("snic_Gbps = 400", "snic_Gbps = 800.0"), "fat-snic")
    hw = profiles.catalog((path,)).get("hardware", "fat-snic")
    assert hw.s == 2.0


def test_env_directory_adds_profiles(tmp_path, monkeypatch):
    _write(tmp_path, HOPPER_LINES, "env-node")
    monkeypatch.setenv(profiles.ENV_VAR, str(tmp_path))
    assert "env-node" in profiles.catalog().names("hardware")


def test_env_must_name_directories(monkeypatch, tmp_path):
    monkeypatch.setenv(profiles.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(PlanError, match="not a directory"):
        profiles.catalog()


def test_override_is_validated_like_a_file():
    hw = profiles.catalog().get("hardware", "hopper")
    assert profiles.apply_overrides(hw, "hardware", (("snic_Gbps", 800),)).s == 2.0
    with pytest.raises(PlanError, match="snic_Gbps = -1"):
        profiles.apply_overrides(hw, "hardware", (("snic_Gbps", -1),))


def test_override_key_must_exist():
    with pytest.raises(PlanError, match=r"unknown key 'snic_gbps' \(did you mean 'snic_Gbps'\?\); `dualpath-plan profiles show NAME` shows"):
        profiles.check_override_keys((("snic_gbps", 800),))  # a near miss: the key meant, not all 80 keys
    with pytest.raises(PlanError, match="unknown key 'zzz'; settable keys: active_params, "):
        profiles.check_override_keys((("zzz", 800),))


def test_parse_override_reads_toml_values():
    assert profiles.parse_override("snic_Gbps=800") == ("snic_Gbps", 800)
    assert profiles.parse_override("indexer_cache=false") == ("indexer_cache", False)
    assert profiles.parse_override("kv_layout=bf16") == ("kv_layout", "bf16")
    with pytest.raises(PlanError, match="not key=value"):
        profiles.parse_override("snic_Gbps")


def test_kv_layout_must_name_a_layout():
    model = profiles.catalog().get("model", "ds-v3.2")
    assert profiles.apply_overrides(model, "model", (("kv_layout", "bf16"), ("indexer_cache", False))).kv_bytes_per_token == 70272
    with pytest.raises(PlanError, match="kv_layouts names"):
        profiles.apply_overrides(model, "model", (("kv_layout", "fp4"),))


def test_ds_v32_kv_bytes_per_token_by_layout():
    model = profiles.catalog().get("model", "ds-v3.2")
    assert model.kv_layouts == {"bf16": 70272, "fp8-flashmla": 40016, "fp8": 35136}
    with_indexer = profiles.apply_overrides(model, "model", (("indexer_cache", True),))
    assert with_indexer.kv_bytes_per_token == 40016 + 8052


def test_workload_hit_and_miss_tokens():
    wl = profiles.catalog().get("workload", "agentic-64k")
    assert wl.hit_tokens + wl.miss_tokens == pytest.approx(32721 + 429)
    assert wl.miss_tokens == pytest.approx(429, rel=0.01)


def test_every_number_of_every_schema_has_a_plausible_range_and_its_reason():
    """The range table is complete: a value outside is refused in one line naming the range and why."""
    for kind, schema in profiles.SCHEMAS.items():
        for key, field in schema.items():
            if field.kind in ("float", "int", "table"):
                assert field.min_value is not None and field.max_value is not None and field.reason, (kind, key)
                assert field.min_value <= field.max_value, (kind, key)
        assert set(profiles.RANGES[kind]) <= set(schema), kind


def test_every_shipped_profile_lies_inside_the_ranges():
    """The ranges refuse nothing real: every shipped profile loads (the catalog checks each value)."""
    cat = profiles.catalog()
    for kind in ("hardware", "model", "workload"):
        assert all(cat.get(kind, name) for name in cat.names(kind)), kind


@pytest.mark.slow
def test_a_data_set_past_the_round_cap_is_refused_before_it_is_drawn():
    """Bounded work: every command draws the workload's data set, so trajectories x turns is capped."""
    from dualpath_plan.model.scenario import build_scenario
    with pytest.raises(PlanError) as info:
        build_scenario("hopper", sets=("trajectories=20000",))
    text = str(info.value)
    assert "trajectories x turns = 20000 x 157 = 3,140,000 rounds is not allowed; a data set holds at most 2,000,000 rounds" in text
    assert profiles.MAX_DATASET_ROUNDS == 2_000_000 and build_scenario("hopper", sets=("trajectories=12000",))


@pytest.mark.parametrize("word, expected", [("Hopper", " (did you mean 'hopper'?)"), ("hoper", " (did you mean 'hopper'?)"),
                                            ("snic_gbps", " (did you mean 'snic_Gbps'?)"), ("zzzz", ""),
                                            ("h100", " (did you mean 'h100-dgx'?)"), ("H100", " (did you mean 'h100-dgx'?)"),
                                            ("gb", " (did you mean one of 'gb200', 'gb300'?)"), ("blackwel", " (did you mean 'blackwell'?)")])
def test_a_near_miss_gets_a_suggestion(word, expected):
    choices = ["hopper", "h200", "h100-dgx", "blackwell", "gb200", "gb300", "snic_Gbps", "cnic_Gbps"]
    assert profiles.did_you_mean(word, choices) == expected


def test_an_ep_table_key_takes_a_number_for_every_size_or_a_table_by_size(tmp_path):
    """``ep_normal_GBps`` and ``ep_normal_intercept_us``: one number serves every EP size, a table one size each."""
    table = profiles.load_file(_write(tmp_path, HOPPER_LINES))
    assert table.ep_normal_Bps == {"16": 310.7e9, "32": 139.4e9, "64": 66.47e9}
    one = profiles.load_file(_write(tmp_path, HOPPER_LINES.replace('ep_normal_GBps = { "16" = 310.7, "32" = 139.4, "64" = 66.47 }',
                                                                  "ep_normal_GBps = 50", 1), "one"))
    assert one.ep_normal_Bps == 50e9
    assert profiles.apply_overrides(table, "hardware", (("ep_normal_GBps", 60),)).ep_normal_Bps == 60e9  # --set: one number


def test_the_throughput_nvlink_keys_are_optional(tmp_path):
    text = "\n".join(line for line in HOPPER_LINES.splitlines() if not line.startswith("ep_normal_nvlink"))
    hw = profiles.load_file(_write(tmp_path, text))
    assert hw.ep_normal_nvlink_Bps is None and hw.ep_normal_nvlink_intercept_s is None


def test_a_storage_node_serves_the_slower_of_its_ports_and_ssds():
    """3FS's node: its ports (2 x 200 Gb/s at the measured 0.806) bind reads before its 16 SSDs; writes go to 3 copies;
    usable bytes are the raw SSD bytes over the copies."""
    node = profiles.catalog().get("storage", "3fs")
    assert node.read_Bps == pytest.approx(2 * 25e9 * 0.806)
    assert node.write_Bps == pytest.approx(min(2 * 25e9 * 0.806, 16 * 5.6e9) / 3)
    assert node.usable_bytes == pytest.approx(16 * 15.393e12 / 3)
    ssd_bound = replace(node, ssds=2)  # two SSDs read 13.6 GB/s, below the ports' 40.3 GB/s
    assert ssd_bound.read_Bps == pytest.approx(2 * 6.8e9)


def test_a_bad_storage_profile_is_one_line(tmp_path):
    text = (Path(profiles.__file__).resolve().parents[2] / "storage_profiles" / "3fs.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text.replace("ssds_per_node = 16", "ssds_per_node = 0"))
    with pytest.raises(PlanError, match=r"ssds_per_node = 0 is not allowed; must be a whole number >= 1"):
        profiles.load_file(path)


def test_no_key_names_two_kinds_of_profile():
    """``--set KEY`` finds the one kind of profile a key belongs to: no key but ``description`` is in two schemas."""
    seen: dict[str, str] = {}
    for kind, schema in profiles.SCHEMAS.items():
        for key in schema:
            assert key == "description" or key not in seen, (key, kind, seen.get(key))
            seen[key] = kind
