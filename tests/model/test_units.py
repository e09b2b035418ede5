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
