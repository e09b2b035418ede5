"""Reading what users hand in (model/inputs.py): regular files within a size, text within a depth and digits."""

from __future__ import annotations

import os

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.model.inputs import MAX_DEPTH, MAX_DIGITS, check_shape, read_regular


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "a.toml"
    path.write_bytes(b"x = 1\n")
    assert read_regular(path, "profile file", 100) == b"x = 1\n"


def test_a_fifo_a_directory_a_missing_file_and_a_large_one_are_one_line_each(tmp_path):
    fifo = tmp_path / "p.toml"
    os.mkfifo(fifo)  # opening it would block until a writer came
    with pytest.raises(PlanError, match=r"p.toml: is not a regular file \(a FIFO, socket or device\); give a profile file$"):
        read_regular(fifo, "profile file", 100)
    with pytest.raises(PlanError, match="is a directory; give a profile file$"):
        read_regular(tmp_path, "profile file", 100)
    with pytest.raises(PlanError, match="profile file not found$"):
        read_regular(tmp_path / "none.toml", "profile file", 100)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 101)
    with pytest.raises(PlanError, match="101 bytes is too large for a profile file; at most 100 bytes$"):
        read_regular(big, "profile file", 100)


def test_nesting_at_the_limit_passes_and_one_more_is_refused_with_its_line():
    check_shape("a = 1\nx = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.toml")
    with pytest.raises(PlanError, match=rf"^f.toml, line 2: nested more than {MAX_DEPTH} deep"):
        check_shape("a = 1\nx = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "f.toml")


def test_brackets_in_strings_and_comments_do_not_count():
    deep = "[" * (MAX_DEPTH + 5)
    check_shape(f'description = "{deep} \\" {deep}"\nnote = \'{deep}\'  # {deep}\n', "f.toml")


def test_a_number_of_too_many_digits_is_refused_one_less_passes():
    check_shape("x = " + "9" * MAX_DIGITS, "--set x")
    with pytest.raises(PlanError, match=rf"^--set x: a number of more than {MAX_DIGITS} digits"):
        check_shape("x = " + "9" * (MAX_DIGITS + 1), "--set x")
