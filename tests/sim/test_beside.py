"""sim.beside: a part run in a second thread gives its value or its error, and the halves cover every row once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dualpath_plan.sim import beside


def test_a_part_beside_returns_its_value_from_another_thread():
    part = beside.Beside(lambda x: (x + 1, threading.current_thread()), 41)
    value, thread = part.result()
    assert value == 42 and thread is not threading.current_thread()


def test_what_a_part_raises_is_raised_by_its_result():
    def fails():
        raise ValueError("bad field")

    part = beside.Beside(fails)
    with pytest.raises(ValueError, match="bad field"):
        part.result()


@pytest.mark.parametrize("n", [0, 1, 4, 5, 1001])
def test_the_halves_write_every_row_once_in_two_threads_when_there_are_many(n, monkeypatch):
    monkeypatch.setattr(beside, "BIG_ROWS", 4)
    hits = np.zeros(n, np.int64)
    threads = set()
    lock = threading.Lock()

    def write(a: int, b: int) -> None:
        with lock:
            hits[a:b] += 1
            threads.add(threading.current_thread())

    beside.in_halves(n, write)
    assert (hits == 1).all()
    assert len(threads) == (2 if n > 4 else 1)


def test_a_big_part_is_begun_beside_and_a_small_one_when_asked():
    calls = []
    later = beside.begun(False, lambda: calls.append(threading.current_thread()) or 1)
    assert calls == [] and later() == 1 and calls == [threading.current_thread()]
    now = beside.begun(True, lambda: threading.current_thread())
    assert now() is not threading.current_thread()
