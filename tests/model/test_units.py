"""Unit constants and the edge conversions (units.py)."""

from dualpath_plan.model import units


def test_400_gbps_is_exactly_50_GBps():
    assert units.gbps_to_Bps(400) == 5.0e10


def test_to_si_names_each_file_unit():
    assert units.to_si(500, "GBps") == 5.0e11
    assert units.to_si(989, "TFLOPS") == 9.89e14
    assert units.to_si(80, "GB") == 8.0e10
    assert units.to_si(1, "GiB") == 2**30
    assert units.to_si(50, "ms") == 0.05


def test_from_si_inverts_to_si():
    assert units.from_si(units.to_si(3.35, "TBps"), "TBps") == 3.35


def test_decimal_and_binary_prefixes_differ():
    assert units.GB == 1e9 and units.GiB == 2**30 and units.BITS_PER_BYTE == 8


def test_large_ratios_and_counts_read_without_exponents_or_odd_prefixes():
    from dualpath_plan.model.fmt import fmt

    assert fmt(3891.2, "x") == "3,891x" and fmt(13490.5, "x") == "13,490x" and fmt(1.5, "x") == "1.5x"
    assert fmt(2.5e12, "turns/s") == "2,500,000 Mturns/s" and fmt(3.2e7, "turns/s") == "32 Mturns/s" and fmt(5e9, "B/s") == "5 GB/s"
    assert fmt(15740.3, "") == "15,740" and fmt(9999.5, "") == "10,000" and fmt(float("nan"), "s") == "n/a"
