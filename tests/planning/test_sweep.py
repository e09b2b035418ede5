"""Sweeps across hardware profiles and P/D splits (sweep.py, report/sweep.py, cli/sweep.py)."""

from __future__ import annotations

import csv
import json

import pytest

from dualpath_plan.bounds.closed_bound import solve_closed
from dualpath_plan.bounds.lp import limits_of
from dualpath_plan.cli import main
from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.scenario import build_scenario
from dualpath_plan.planning.sweep import sweep


def test_every_split_of_the_budget_is_bounded_and_the_best_is_the_max():
    sc = build_scenario("hopper")
    result = sweep([sc], gpus=48)
    dual = [p for p in result.points if p.mode == "dualpath"]
    assert [(p.P, p.D) for p in dual] == [(P, 6 - P) for P in range(1, 6)]
    best = result.best["hopper"]["dualpath"]
    assert best.bound.turns_per_s == max(p.bound.turns_per_s for p in dual)
    assert best.bound == solve_closed(limits_of(sc.with_nodes(best.P, best.D)), "dualpath")


def test_a_split_that_serves_nothing_says_why():
    points = sweep([build_scenario("hopper")], gpus=48).points
    zero = {(p.P, p.mode): p.serves_nothing_because for p in points if p.bound.turns_per_s == 0}
    # ds-v3.2's weights need two hopper nodes on either side: 1P5D and 5P1D serve nothing
    assert {P: why for (P, _), why in zero.items()} == {1: ("prefill_weights_do_not_fit",), 5: ("decode_weights_do_not_fit",)}
    assert all(p.serves_nothing_because == () for p in points if p.bound.turns_per_s > 0)


def test_profiles_with_fewer_gpus_per_node_get_more_nodes():
    result = sweep([build_scenario("gb200")], gpus=48)
    assert {p.P + p.D for p in result.points} == {12}


def test_a_budget_below_two_nodes_is_refused():
    with pytest.raises(PlanError, match="needs >= 16"):
        sweep([build_scenario("hopper")], gpus=8)


@pytest.mark.slow
def test_cli_writes_csv_and_plot(tmp_path, capsys):
    out_csv, out_png = tmp_path / "s.csv", tmp_path / "s.png"
    code = main(["sweep", "--profile", "hopper", "--profile", "blackwell", "--csv", str(out_csv), "--plot", str(out_png), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and set(data["best"]) == {"hopper", "blackwell"}
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == len(data["points"]) == 2 * 5 * 3
    assert {r["serves_nothing_because"] for r in rows if float(r["turns_per_s"]) == 0} == {"prefill_weights_do_not_fit", "decode_weights_do_not_fit"}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.png"]  # no temporary file left behind


def test_cli_refuses_a_missing_directory_without_writing(tmp_path, capsys):
    target = tmp_path / "missing" / "s.csv"
    code = main(["sweep", "--profile", "hopper", "--csv", str(target)])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and err.count("\n") == 1 and not target.exists()


def test_cli_table_names_the_best_split(capsys):
    code = main(["sweep", "--profile", "hopper"])
    out = capsys.readouterr().out
    assert code == 0 and "2P4D" in out and "turns/s" in out and "the most robust" in out


@pytest.mark.slow
def test_every_point_says_whether_it_is_in_its_optimal_set_and_which_is_picked(tmp_path):
    import csv

    from dualpath_plan.planning.sweep import sweep

    result = sweep([build_scenario("hopper", model="ds-27b")], 48)
    target = tmp_path / "s.csv"
    assert main(["sweep", "--profile", "hopper", "--model", "ds-27b", "--csv", str(target)]) == 0
    rows = [r for r in csv.DictReader(target.open()) if r["mode"] == "dualpath"]
    top = max(float(r["turns_per_s"]) for r in rows)
    assert [r["in_optimal_set"] == "True" for r in rows] == [float(r["turns_per_s"]) >= top * 0.99 for r in rows]
    picked = [r for r in rows if r["picked"] == "True"]
    best = result.best["hopper"]["dualpath"]
    assert len(picked) == 1 and (int(picked[0]["P"]), int(picked[0]["D"])) == (best.P, best.D)


@pytest.mark.slow
def test_bottleneck_names_the_best_split_of_its_nodes(capsys):
    code = main(["bottleneck", "--profile", "hopper", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["best_split"]["dualpath"]["P"] + data["best_split"]["dualpath"]["D"] == 6
    code = main(["bottleneck", "--profile", "hopper"])
    out = capsys.readouterr().out
    assert "Verdict:" in out and "Order: of these 6 nodes" in out and "Next purchase" in out


def test_a_budget_no_split_of_which_serves_says_so_instead_of_an_infinite_gain(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["sweep", "--profile", "hopper", "--gpus", "16"])
    out = capsys.readouterr().out
    assert code == 0 and "infx" not in out and " none │" in out
    assert "serves nothing: weights fit neither side" in out


def test_a_money_budget_buys_each_profile_the_nodes_its_price_allows():
    from dualpath_plan.planning.sweep import priced_sweep

    scs = [build_scenario("hopper"), build_scenario("blackwell")]
    result = priced_sweep(scs, budget_usd=5e6, prices_usd={"hopper": 250_000.0, "blackwell": 600_000.0})
    sizes = {p.profile: p.P + p.D for p in result.points}
    assert sizes == {"hopper": 20, "blackwell": 8} and result.gpus_budget is None and result.basis == "purchase"
    best = result.best["hopper"]["dualpath"]
    assert result.cost(best) == 20 * 250_000.0


@pytest.mark.parametrize("argv, needle", [
    (["sweep", "--profile", "hopper", "--budget-usd", "5e6"], "hopper has none: give --node-cost hopper=USD"),
    (["sweep", "--gpus", "48", "--budget-usd", "5e6"], "--gpus and --budget-usd were both given"),
    (["sweep", "--profile", "hopper", "--budget-usd-per-hour", "500"], "hopper has none: give --rent hopper=USD/h"),
    (["sweep", "--profile", "h100-dgx", "--budget-usd", "5e6", "--rent", "40"], "price a question on one basis"),
    (["sweep", "--profile", "h100-dgx", "--budget-usd", "5e6", "--budget-usd-per-hour", "500"], "--budget-usd and --budget-usd-per-hour were both given"),
    (["sweep", "--profile", "h100-dgx", "--budget-usd-per-hour", "500", "--rent", "gold=5"], "--rent names gold, which is not a candidate"),
    (["sweep", "--profile", "hopper", "--budget-usd", "5e6", "--node-cost", "Hopper=250000"],
     "--node-cost names Hopper, which is not a candidate profile (did you mean 'hopper'?)"),
    (["sweep", "--profile", "h100-dgx", "--budget-usd-per-hour", "90"], "buys 1 h100-dgx node(s) at 49.24 USD/h each"),
    (["sweep", "--profile", "hopper", "--budget-usd", "3e5", "--node-cost", "hopper=250000"], "buys 1 hopper node(s)"),
])
def test_money_budget_refusals_are_one_line(capsys, argv, needle):
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (1, 2) and needle in err and err.count("\n") == 1


def test_a_gpu_budget_is_priced_where_prices_are_given(capsys):
    code = main(["sweep", "--profile", "hopper", "--node-cost", "250000", "--json"])
    row = json.loads(capsys.readouterr().out)["best"]["hopper"]["dualpath"]
    assert code == 0 and row["cost_usd"] == 6 * 250_000 and row["usd_per_turn_per_s"] == pytest.approx(6 * 250_000 / row["turns_per_s"])


@pytest.mark.slow
def test_an_equal_rent_sweep_rents_what_each_profile_s_rent_allows(capsys):
    code = main(["sweep", "--profile", "h100-dgx", "--profile", "blackwell", "--budget-usd-per-hour", "1000", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["basis"] == "rent" and data["budget_usd_per_hour"] == 1000 and data["budget_usd"] is None
    assert data["rents_usd_per_hour"] == {"h100-dgx": 49.24, "blackwell": 68.80} and data["prices_usd"] is None
    for name, rent in (("h100-dgx", 49.24), ("blackwell", 68.80)):
        row = data["best"][name]["dualpath"]
        assert row["P"] + row["D"] == int(1000 // rent) and row["cost_usd"] is None
        assert row["cost_usd_per_hour"] == pytest.approx((row["P"] + row["D"]) * rent)
        assert row["usd_per_turn"] == pytest.approx(row["cost_usd_per_hour"] / (3600 * row["turns_per_s"]))
    code = main(["sweep", "--profile", "h100-dgx", "--profile", "blackwell", "--budget-usd-per-hour", "1000"])
    out = capsys.readouterr().out
    assert code == 0 and "Equal rent" in out and "per 1M" in out  # the header may wrap before "turns"


@pytest.mark.slow
def test_an_equal_spend_table_prices_a_turn_per_second(capsys):
    code = main(["sweep", "--profile", "hopper", "--profile", "blackwell", "--budget-usd", "5e6", "--node-cost", "hopper=250000",
                 "--node-cost", "blackwell=500000", "--json"])
    data = json.loads(capsys.readouterr().out)
    row = data["best"]["hopper"]["dualpath"]
    assert code == 0 and data["budget_usd"] == 5e6 and row["cost_usd"] == 5e6
    assert row["usd_per_turn_per_s"] == pytest.approx(5e6 / row["turns_per_s"])
    code = main(["sweep", "--profile", "hopper", "--profile", "blackwell", "--budget-usd", "5e6", "--node-cost", "hopper=250000",
                 "--node-cost", "blackwell=500000"])
    assert code == 0 and "Equal spend" in capsys.readouterr().out


@pytest.mark.slow
def test_a_sweep_with_one_side_changed_writes_its_csv_and_checks_its_pick(tmp_path, capsys):
    """pe./de. --set makes the two sides differ ("hopper+hopper"): the points, the sets and the check must agree on it."""
    target = tmp_path / "s.csv"
    code = main(["sweep", "--profile", "hopper", "--set", "pe.hbm_efficiency_frac=0.5", "--csv", str(target), "--check", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and target.exists() and list(data["optimal_set"]) == ["hopper+hopper"]
    group = data["runner_check"]["groups"][0]
    pick = data["best"]["hopper+hopper"]["dualpath"]
    first = group["modes"]["dualpath"]["candidates"][0]
    assert group["profile"] == "hopper+hopper" and (first["P"], first["D"]) == (pick["P"], pick["D"])


def test_the_api_sweep_refuses_two_budgets_as_the_command_does():
    import dualpath_plan as dp

    with pytest.raises(PlanError, match="--gpus and --budget-usd were both given"):
        dp.sweep(["hopper"], gpus=48, budget_usd=5e6, prices_usd={"hopper": 1e5})


def test_a_gpu_sweep_of_rented_and_unrented_types_prices_the_rented_and_says_which_it_left_out(capsys):
    code = main(["sweep", "--profile", "h100-dgx", "--profile", "hopper"])
    out = capsys.readouterr().out
    assert code == 0 and "What each pick costs" in out and "hopper has no rent" in " ".join(out.split())


def test_sides_priced_apart_are_refused_not_bought_at_the_prefill_sides_price():
    from dualpath_plan.model.money import RENT

    sc = build_scenario("h200", sets=("de.rent_per_node_hour_usd=25",))
    with pytest.raises(PlanError, match=r"^h200\+h200: a prefill node costs 50.44 USD/h and a decode node 25.00 USD/h .*use plan"):
        sweep([sc], budget=1000.0, basis=RENT)
    assert sweep([sc], budget=1000.0, prices={"h200": 25.0}, basis=RENT).best  # one price for both sides, given: no refusal


def test_a_rent_set_on_one_side_is_swept_as_plan_prices_it(capsys):
    flags = ["--profile", "h200", "--budget-usd-per-hour", "1000", "--set", "de.rent_per_node_hour_usd=25", "--json"]
    assert main(["sweep", *flags]) == 0
    best = json.loads(capsys.readouterr().out)["groups"][0]["picks"]["dualpath"]
    assert main(["plan", *flags, "--mode", "dualpath"]) == 0
    picked = json.loads(capsys.readouterr().out)
    assert (best["P"], best["D"]) == (picked["P"], picked["D"]) == (4, 31)


def test_a_gpu_budget_costs_each_side_at_its_own_price():
    from dualpath_plan.model.money import RENT

    sc = build_scenario("h200", sets=("de.rent_per_node_hour_usd=25",))
    result = sweep([sc], basis=RENT)  # 48 GPUs: 6 nodes
    point = result.best[sc.profile_label]["dualpath"]
    assert result.cost(point) == pytest.approx(point.P * sc.pe_hw.rent_per_node_hour_usd + point.D * 25.0)
