"""``plan`` and the grown ``bottleneck`` on the command line: JSON keys, units, one-line refusals (cli/plan.py, cli/bottleneck.py)."""

from __future__ import annotations

import json

import pytest

from dualpath_plan.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_json_has_the_stable_keys(capsys):
    code, out, err = run(capsys, "plan", "--profile", "hopper", "--nodes", "8", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert {"P", "D", "turns_per_s", "binding", "mode", "alternatives"} <= set(data)
    assert data["mode"] == "dualpath" and data["P"] + data["D"] <= 8
    assert set(data["modes"]) == {"basic", "dualpath"}
    assert data["modes"]["dualpath"]["relaxation_turns_per_s"] >= data["turns_per_s"] * (1 - 1e-6)
    assert all({"P", "D", "turns_per_s", "binding", "mode"} <= set(alt) for alt in data["alternatives"])


def test_plan_human_output_names_units_and_the_relaxation(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "hopper", "--nodes", "8", "--mode", "dualpath")
    assert code == 0
    assert "turns/s" in out and "nodes" in out and "GPUs" in out and "LP relaxation" in out
    assert "basic" not in out.split("\n", 1)[1]  # only the asked mode is planned


def test_plan_target_json_reports_cost(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "hopper", "--target-turns-per-s", "100", "--node-cost", "250000", "--json")
    data = json.loads(out)
    assert code == 0 and data["question"] == "target"
    assert data["modes"]["dualpath"]["cost_unit"] == "USD"
    assert data["modes"]["dualpath"]["cost"] == pytest.approx(250000 * (data["P"] + data["D"]))
    assert data["turns_per_s"] >= 100 * (1 - 1e-6)


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["plan", "--profile", "hopper", "--nodes", "0"], 2, "--nodes = 0"),
        (["plan", "--profile", "hopper", "--nodes", "6", "--target-turns-per-s", "1e7"], 1, "not reachable within 6 nodes"),
        (["plan", "--profile", "hopper", "--nodes", "1"], 1, "cannot buy the prefill nodes that hold"),
        (["plan", "--profile", "hopper", "--nodes", "16", "--prefill-instance-nodes", "17"], 1,
         "cannot buy one prefill instance of --prefill-instance-nodes = 17 nodes plus one decode node"),
        (["plan", "--profile", "nope", "--nodes", "8"], 2, "unknown hardware profile 'nope'"),
        (["plan", "--profile", "hopper"], 2, "give a budget"),
        (["plan", "--profile", "hopper", "--nodes", "many"], 2, "--nodes"),
        (["plan", "--profile", "hopper", "--nodes", "8", "--tpot-slo-ms", "-1"], 2, "--tpot-slo-ms"),
        (["bottleneck", "--profile", "hopper", "--dtype", "fp6"], 2, "--dtype 'fp6'"),
        (["bottleneck", "--profile", "hopper", "--dtype", "fp4"], 2, "dtype fp4 is not allowed on hopper"),
        (["bottleneck", "--profile", "hopper", "--decode-instance-nodes", "0"], 2, "--decode-instance-nodes"),
    ],
)
def test_bad_input_is_one_line_with_an_exit_code(capsys, argv, code, words):
    got, out, err = run(capsys, *argv)
    assert got == code and out == ""
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_bottleneck_json_grows_the_lp_keys_and_keeps_the_old_ones(capsys):
    # DS 27B: its prefill is light enough that on 2P4D only the two sides' storage NICs bind
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--model", "ds-27b", "--accounting", "paper", "--json")
    data = json.loads(out)
    assert code == 0
    dual = data["modes"]["dualpath"]
    assert dual["kv_Bps"] == pytest.approx(3.0e11) and dual["binding"] == ["pe_snic", "de_snic"]  # foundation keys unchanged
    assert dual["kv_at_bound_Bps"] == pytest.approx(dual["turns_per_s"] * data["limits"]["hit_bytes_per_turn"])
    assert set(dual["shadow_prices"]) == set(dual["binding_at_bound"])
    assert dual["shadow_prices"]["de_snic"]["per"] == "node"
    assert set(data["speedup_vs_basic"]) == {"dualpath", "oracle"}
    assert data["speedup_vs_basic"]["dualpath"] == pytest.approx(3.0)
    assert data["modes"]["oracle"]["kv_Bps"] is None and data["modes"]["oracle"]["turns_per_s"] > 0
    assert data["next_purchase"]["resource"] in dual["binding_at_bound"]


def test_bottleneck_heterogeneous_cluster_hides_the_range_and_shows_bounds(capsys):
    code, out, _ = run(capsys, "bottleneck", "--pe-profile", "hopper", "--de-profile", "h20", "--json")
    data = json.loads(out)
    assert code == 0 and data["pd_range"] is None
    assert (data["profile_pe"], data["profile_de"]) == ("hopper", "h20")
    assert data["modes"]["dualpath"]["turns_per_s"] > data["modes"]["basic"]["turns_per_s"]


def test_bottleneck_text_names_the_binding_resource_in_words_and_what_to_buy(capsys):
    code, out, _ = run(capsys, "bottleneck", "--profile", "hopper", "--model", "ds-27b")
    assert code == 0
    assert "decode-node storage NICs" in out and "What to buy next" in out and "turns/s" in out


def test_a_budget_past_the_search_limit_is_refused_quickly(capsys):
    from dualpath_plan.cli import main

    code = main(["plan", "--profile", "hopper", "--gpus", "40000"])
    err = capsys.readouterr().err
    assert code == 1 and "at most 4,096 nodes per side" in err and "40,000 GPUs allows up to 4,999 nodes" in err and err.count("\n") == 1


@pytest.mark.slow
def test_priced_node_types_each_get_their_pick_and_a_cost_per_turn_per_second(capsys):
    from dualpath_plan.cli import main

    code = main(["plan", "--profile", "hopper", "--profile", "h20", "--target-turns-per-s", "500", "--node-cost", "hopper=250000",
                 "--node-cost", "h20=150000", "--mode", "dualpath", "--json"])
    data = json.loads(capsys.readouterr().out)
    per_type = data["modes"]["dualpath"]["per_node_type"]
    assert code == 0 and len(per_type) == 4
    for row in per_type:
        assert row["usd_per_turn_per_s"] == pytest.approx(row["pick"]["cost"] / row["pick"]["turns_per_s"], rel=1e-12)
    code = main(["plan", "--profile", "hopper", "--profile", "h20", "--target-turns-per-s", "500", "--node-cost", "hopper=250000",
                 "--node-cost", "h20=150000", "--mode", "dualpath"])
    out = capsys.readouterr().out
    assert code == 0 and "the pick of each node type" in out and "USD per turn/s" in out


@pytest.mark.slow
def test_price_is_the_same_flag_as_node_cost(capsys):
    from dualpath_plan.cli import main

    outs = []
    for flag in ("--node-cost", "--price"):
        assert main(["plan", "--profile", "hopper", "--target-turns-per-s", "500", flag, "hopper=250000", "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] and outs[0]["modes"]["dualpath"]["cost_unit"] == "USD"


def test_a_rented_plan_carries_what_a_turn_costs_in_its_json(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "h100-dgx", "--budget-usd-per-hour", "800", "--mode", "dualpath", "--json")
    data = json.loads(out)
    best = data["modes"]["dualpath"]
    assert code == 0 and data["basis"] == "rent" and best["cost_unit"] == "USD/h" and best["cost"] <= 800
    assert best["usd_per_turn"] == pytest.approx(best["cost"] / (3600 * best["turns_per_s"]))


@pytest.mark.slow
def test_types_priced_on_no_common_basis_are_counted_in_nodes_and_the_output_says_why(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "gb200", "--profile", "hopper", "--target-agents-per-s", "5", "--mode", "dualpath")
    text = " ".join(out.split())
    assert code == 0 and "(in nodes)" in text and "gb200 has a rent and hopper has none; give --rent hopper=USD/h" in text


def test_a_missing_price_names_the_type_to_price(capsys):
    code, _, err = run(capsys, "plan", "--profile", "hopper", "--profile", "h100-dgx", "--budget-usd-per-hour", "900")
    assert code == 2 and "hopper has none: give --rent hopper=USD/h" in err


def test_missing_prices_or_power_of_several_types_are_said_for_each(capsys):
    code, _, err = run(capsys, "plan", "--profile", "h200", "--profile", "blackwell", "--budget-usd", "2e7")
    assert code == 2 and "blackwell, h200 have none: give --node-cost NAME=USD for each (e.g. --node-cost blackwell=USD)" in err
    code, _, err = run(capsys, "plan", "--profile", "h20", "--profile", "gb200", "--power-kw", "500")
    assert code == 2 and ("h20 has none: add it to a copy of the profile (--profile-file), or --set node_power_W=W, which sets it on "
                          "every profile of the command") in err


def test_a_plan_of_nvl72_trays_says_how_many_racks_they_fill(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "gb200", "--nodes", "20", "--alternatives", "0")
    text = " ".join(out.split())
    assert code == 0 and "note: plan counts nodes as compute trays of one NVLink domain a rack (gb200: 18 trays of 4 GPUs);" in text
    assert "dualpath 20 gb200 trays fill 1.111 racks" in text
    code, out, _ = run(capsys, "plan", "--profile", "hopper", "--nodes", "12", "--alternatives", "0")
    assert "trays" not in out
