"""The measurement CSV (calibration/measurements.py): every field checked, one line naming the line and the field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dualpath_plan.calibration.measurements import COLUMNS, read_csv, write_csv
from dualpath_plan.model.errors import PlanError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calibration.csv"
HEADER = ",".join(COLUMNS)
GOOD = "gemm,fp8,4096x7168,64,1,-,0,12.5"


def _csv(tmp_path, *lines: str, header: str = HEADER) -> Path:
    path = tmp_path / "m.csv"
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


def test_the_shipped_example_reads_and_every_op_is_in_it():
    rows = read_csv(EXAMPLE)
    assert {r.op for r in rows} == {"gemm", "grouped_gemm", "mla_decode", "mla_prefill", "a2a_ll_dispatch", "a2a_ll_combine",
                                    "a2a_normal_dispatch", "a2a_normal_combine"}


def test_a_row_reads_in_si_and_writes_back_the_same_text(tmp_path):
    [row] = read_csv(_csv(tmp_path, GOOD))
    assert (row.op, row.dtype, row.shape, row.tokens, row.latency_s) == ("gemm", "fp8", (4096, 7168), 64.0, pytest.approx(12.5e-6))
    assert write_csv((row,)) == f"{HEADER}\n{GOOD}\n"
    assert row.where.endswith("m.csv, line 2")


@pytest.mark.parametrize("line, needle", [
    ("gemm,fp8,4096x7168,64,1,-,0,12us", "line 2: latency_us = '12us' is not allowed; must be a number (a number of microseconds"),
    ("gemm,fp8,4096x7168,64,1,-,0,-3", "line 2: latency_us = '-3' is not allowed"),
    ("gemm,fp8,4096x7168,64,1,-,0,0", "line 2: latency_us = '0' is not allowed; must be > 0 microseconds"),
    ("gemm,fp8,4096x7168,64,1,-,0,nan", "line 2: latency_us = 'nan' is not allowed"),
    ("gemm,int4,4096x7168,64,1,-,0,12", "line 2: dtype = 'int4' is not allowed; must be one of fp8, bf16, fp4"),
    ("conv,fp8,4096x7168,64,1,-,0,12", "line 2: op = 'conv' is not allowed"),
    ("gemm,fp8,4096,64,1,-,0,12", "line 2: shape = '4096' is not allowed; must be NxK for op gemm"),
    ("grouped_gemm,fp8,7168x2048x8x16,64,1,-,0,12", "must have experts per token k <= experts E"),
    ("gemm,fp8,4096x7168,64.5,1,-,0,12", "line 2: tokens = '64.5' is not allowed; must be a whole number"),
    ("gemm,fp8,4096x7168,64,1,rdma,0,12", "line 2: path = 'rdma' is not allowed; must be '-' for op gemm"),
    ("a2a_ll_dispatch,fp8,7168x8,64,16,-,0,12", "line 2: path = '-' is not allowed; must be one of nvlink, rdma"),
    ("mla_decode,fp8,128,64,1,-,0,12", "line 2: context = '0' is not allowed"),
    ("gemm,fp8,4096x7168,64,1,-,0", "line 2: 7 fields; the header has 8"),
])
def test_a_bad_field_is_one_line_naming_the_line_and_the_field(tmp_path, line, needle):
    with pytest.raises(PlanError) as info:
        read_csv(_csv(tmp_path, line))
    assert needle in str(info.value) and info.value.exit_code == 2 and "\n" not in str(info.value)


def test_a_missing_column_a_repeated_row_and_an_empty_file_are_refused(tmp_path):
    with pytest.raises(PlanError, match="line 1: missing column latency_us"):
        read_csv(_csv(tmp_path, "gemm,fp8,4096x7168,64,1,-,0", header=",".join(COLUMNS[:-1])))
    with pytest.raises(PlanError, match="line 3: repeats the measurement of line 2"):
        read_csv(_csv(tmp_path, GOOD, GOOD.replace("12.5", "13")))
    with pytest.raises(PlanError, match="no measurements after the header"):
        read_csv(_csv(tmp_path))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(PlanError, match="empty"):
        read_csv(tmp_path / "empty.csv")


def test_a_fifo_is_refused_before_it_is_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(PlanError, match="not a regular file"):
        read_csv(tmp_path / "pipe.csv")
