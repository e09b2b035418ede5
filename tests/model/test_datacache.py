"""The data-set cache: it changes when a result comes, never what it is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dualpath_plan.model import datacache, workload
from dualpath_plan.model.profiles import catalog


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A cache folder of the test's own, and no data set held in memory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(datacache.ENV_VAR, raising=False)
    workload.dataset.cache_clear()
    yield tmp_path / "dualpath-plan" / "datasets"
    workload.dataset.cache_clear()


def _draw(name: str = "agentic-32k") -> workload.Trajectories:
    workload.dataset.cache_clear()
    return workload.dataset(catalog(()).get("workload", name))


def _same(a: workload.Trajectories, b: workload.Trajectories) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ("append_tokens", "gen_tokens", "offsets")) and a.source == b.source


@pytest.mark.slow
def test_a_kept_data_set_is_the_one_drawn(fresh, monkeypatch):
    first = _draw()
    assert len(list(fresh.glob("*.npz"))) == 1
    monkeypatch.setattr(workload, "synthesize", lambda *a, **k: pytest.fail("drew again despite the cache"))
    assert _same(_draw(), first)


@pytest.mark.slow
@pytest.mark.parametrize("garbage", [b"", b"not an npz", b"PK\x03\x04 truncated"])
def test_a_broken_file_is_drawn_again_and_replaced(fresh, garbage):
    first = _draw()
    (path,) = fresh.glob("*.npz")
    path.write_bytes(garbage)
    assert _same(_draw(), first)
    assert datacache.load(path.stem, ("offsets",)) is not None  # replaced by a whole file


@pytest.mark.slow
def test_a_file_of_another_size_is_not_taken(fresh):
    first = _draw()
    (path,) = fresh.glob("*.npz")
    np.savez(path, append_tokens=np.ones(3, dtype=np.int64), gen_tokens=np.ones(3, dtype=np.int64), offsets=np.array([0, 3]))
    assert _same(_draw(), first)


@pytest.mark.slow
def test_a_folder_that_cannot_be_written_only_costs_a_draw(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # dualpath-plan/ cannot be made under a file
    monkeypatch.delenv(datacache.ENV_VAR, raising=False)
    drawn = _draw()
    monkeypatch.setenv(datacache.ENV_VAR, "off")
    assert _same(_draw(), drawn)
    workload.dataset.cache_clear()


@pytest.mark.slow
def test_off_keeps_nothing(fresh, monkeypatch):
    monkeypatch.setenv(datacache.ENV_VAR, "off")
    _draw()
    assert not fresh.exists()


@pytest.mark.parametrize("field", ["name", "trajectories", "turns", "append_tokens", "gen_tokens", "context_tokens", "total_tokens",
                                   "max_len_tokens"])
def test_the_key_follows_every_field_the_draw_reads(field):
    base = catalog(()).get("workload", "agentic-32k")
    value = getattr(base, field)
    changed = replace(base, **{field: value + "x" if isinstance(value, str) else value + 1})
    assert workload.dataset_key(changed) != workload.dataset_key(base)


def test_fields_the_draw_does_not_read_share_the_key():
    base = catalog(()).get("workload", "agentic-32k")
    assert workload.dataset_key(replace(base, hit_rate=0.9, description="x", path="elsewhere")) == workload.dataset_key(base)


@pytest.mark.slow
def test_files_other_code_kept_are_deleted_when_the_next_is_written(fresh):
    fresh.mkdir(parents=True)
    stale = fresh / "000000000000-0123.npz"
    stale.write_bytes(b"old")
    _draw()
    assert not stale.exists() and len(list(fresh.glob("*.npz"))) == 1


def test_without_a_home_folder_the_cache_is_off(monkeypatch):
    monkeypatch.delenv(datacache.ENV_VAR, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(datacache.Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError("no home"))))
    assert datacache.folder() is None
    datacache.store("abc-def", {"x": np.zeros(1)})  # nothing to write to, and no error


def test_a_folder_given_in_the_environment_holds_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(datacache.ENV_VAR, str(tmp_path / "here"))
    assert datacache.folder() == tmp_path / "here"
