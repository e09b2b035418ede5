"""Output files (report/files.py): atomic replacement of regular files, links followed, devices written into."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dualpath_plan.model.errors import PlanError
from dualpath_plan.report.files import check_output, write_atomic


def _write(text: str):
    return lambda tmp: Path(tmp).write_text(text)


def test_a_regular_file_is_replaced_and_no_temporary_file_is_left(tmp_path):
    out = tmp_path / "a.csv"
    out.write_text("old")
    write_atomic(out, _write("new"))
    assert out.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["a.csv"]


def test_a_symlink_stays_and_its_target_gets_the_content(tmp_path):
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    target.write_text("old")
    link.symlink_to(target.name)
    write_atomic(link, _write("new"))
    assert link.is_symlink() and target.read_text() == "new"


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so opening for writing does not block
    try:
        write_atomic(fifo, _write("through the pipe"))
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    assert fifo.exists() and not fifo.is_file()


def test_a_failed_write_is_one_error_and_nothing_is_left(tmp_path):
    def fail(tmp):
        raise OSError(28, "No space left on device")

    with pytest.raises(PlanError, match="cannot write [(]No space left on device[)]"):
        write_atomic(tmp_path / "a.csv", fail)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, needle", [("-", "standard output"), (".", "give a file name"), ("", "give a file name"),
                                          ("sub", "is a directory"), ("missing/a.csv", "does not exist")])
def test_check_output_refuses_what_cannot_be_a_file(tmp_path, monkeypatch, name, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(PlanError, match=needle):
        check_output(Path(name), "--csv")
