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
    write_atomic(out, _write("new"), "--csv")
    assert out.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["a.csv"]


def test_a_symlink_stays_and_its_target_gets_the_content(tmp_path):
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    target.write_text("old")
    link.symlink_to(target.name)
    write_atomic(link, _write("new"), "--csv")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so opening for writing does not block
    try:
        write_atomic(fifo, _write("through the pipe"), "--csv")
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    assert fifo.exists() and not fifo.is_file()


def test_a_failed_write_is_one_error_and_nothing_is_left(tmp_path):
    def fail(tmp):
        raise OSError(28, "No space left on device")

    with pytest.raises(PlanError, match="^--csv .*a.csv: cannot write [(]No space left on device[)]"):
        write_atomic(tmp_path / "a.csv", fail, "--csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, needle", [("-", "standard output"), (".", "give a file name"), ("", "give a file name"),
                                          ("sub", "is a directory"), ("missing/a.csv", "does not exist")])
def test_check_output_refuses_what_cannot_be_a_file(tmp_path, monkeypatch, name, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(PlanError, match=needle):
        check_output(Path(name), "--csv")


def test_check_output_refuses_a_loop_of_symbolic_links(tmp_path):
    """A RuntimeError (Python 3.11's "Symlink loop") came out of the command before."""
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    with pytest.raises(PlanError, match=r"^--csv .*a.csv: is a loop of symbolic links; give a file name$"):
        check_output(tmp_path / "a.csv", "--csv")


def test_check_output_refuses_a_fifo_outside_dev_but_not_dev_stdout(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(PlanError, match=r"^--csv .*pipe.csv: is not a regular file \(a FIFO, socket or device\)"):
        check_output(fifo, "--csv")
    check_output(Path("/dev/stdout"), "--csv")


def test_a_name_the_file_system_allows_is_written_and_a_longer_one_refused(tmp_path):
    """A legal 254-byte name was refused because the temporary name was longer; now the temporary name is cut."""
    longest = tmp_path / ("a" * 250 + ".csv")
    check_output(longest, "--csv")
    write_atomic(longest, _write("x"), "--csv")
    assert longest.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == [longest.name]
    with pytest.raises(PlanError, match="the file name is 260 bytes; this file system allows at most 255"):
        check_output(tmp_path / ("a" * 256 + ".csv"), "--csv")


def test_check_output_refuses_a_directory_it_cannot_write(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(PlanError, match=r"^--csv .*a.csv: directory .* is not writable$"):
        check_output(tmp_path / "a.csv", "--csv")


def test_a_write_removes_the_temporaries_a_killed_writer_left_and_only_those(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)  # that process has exited
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale, busy = tmp_path / f".a.csv.{dead}.abcdefgh.tmp", tmp_path / f".a.csv.{live.pid}.ijklmnop.tmp"
        stale.write_text("partial")
        busy.write_text("being written")
        write_atomic(tmp_path / "a.csv", _write("new"), "--csv")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.csv", busy.name])
    finally:
        live.kill()
        live.wait()


def test_sigterm_during_a_write_exits_143_and_leaves_no_temporary(tmp_path):
    import signal
    import subprocess
    import sys

    code = f"""
import time
from pathlib import Path
from dualpath_plan.report.files import write_atomic
def slow(tmp):
    Path(tmp).write_text("half")
    print("writing", flush=True)
    for _ in range(600):  # a writer at work: the kernel may hand SIGTERM to a library's thread, and the main thread
        time.sleep(0.1)   # runs the handler at its next step, which one 60 s sleep would put off past the timeout
write_atomic(Path({str(tmp_path / 'a.csv')!r}), slow, "--csv")
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "writing\n"
    assert any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 143 and err == ""
    assert list(tmp_path.iterdir()) == []


def test_a_directory_the_permission_bits_call_writable_but_that_takes_no_file_is_refused_before_any_work():
    from dualpath_plan.model.errors import PlanError
    from dualpath_plan.report.files import check_output

    with pytest.raises(PlanError, match=r"--turns /proc/x.csv: cannot write a file in directory '/proc'"):
        check_output(Path("/proc/x.csv"), "--turns", ".csv")


def test_a_bare_suffix_is_no_file_name(tmp_path):
    from dualpath_plan.model.errors import PlanError
    from dualpath_plan.report.files import check_output

    with pytest.raises(PlanError, match=r"give a file name before .csv"):
        check_output(tmp_path / ".csv", "--timeseries", ".csv")
