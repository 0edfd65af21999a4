"""The on-disk computation cache (`geoeval.core.cache.disk`) and `geoeval cache` (`geoeval.cli.cache`)."""

from __future__ import annotations

import multiprocessing
import pickle
import time

import pytest

from geoeval.cli import cache as cache_cli
from geoeval.core.cache import disk as diskcache
from geoeval.core.cache.disk import DiskCache, content_key


@pytest.fixture(autouse=True)
def _cache_on(monkeypatch):
    monkeypatch.delenv(diskcache.NO_CACHE_ENV, raising=False)


def test_roundtrip_and_miss(tmp_path):
    cache = DiskCache("ns", "v1", root=tmp_path)
    key = content_key(b"image bytes")
    assert cache.get(key, "missing") == "missing"
    cache.put(key, {"stations": ("A", "B"), "n": 2})
    assert cache.get(key) == {"stations": ("A", "B"), "n": 2}
    assert cache.path_for(key).is_file()
    assert not list(cache.path_for(key).parent.glob("*.tmp"))  # the temp file was renamed, not left


def test_get_or_compute_computes_once(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return [1, 2, 3]

    cache = DiskCache("ns", "v1", root=tmp_path)
    assert cache.get_or_compute("k" * 64, compute) == ([1, 2, 3], False)
    # another instance (another job, worker or rerun) reads it from disk
    assert DiskCache("ns", "v1", root=tmp_path).get_or_compute("k" * 64, compute) == ([1, 2, 3], True)
    assert len(calls) == 1


def test_a_changed_version_never_reads_the_old_value(tmp_path):
    DiskCache("ns", "v1", root=tmp_path).put("a" * 64, "old reading")
    assert DiskCache("ns", "v2", root=tmp_path).get("a" * 64) is None
    assert DiskCache("other", "v1", root=tmp_path).get("a" * 64) is None


def test_content_key_separates_parts():
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key(b"x") == content_key("x")


def test_damaged_file_is_a_miss_and_removed(tmp_path):
    cache = DiskCache("ns", "v1", root=tmp_path)
    cache.put("b" * 64, list(range(1000)))
    path = cache.path_for("b" * 64)
    path.write_bytes(path.read_bytes()[:20])  # a write cut short
    assert cache.get("b" * 64, "miss") == "miss"
    assert not path.exists()


def test_a_file_under_another_key_is_not_served(tmp_path):
    cache = DiskCache("ns", "v1", root=tmp_path)
    cache.put("c" * 64, "value of c")
    cache.path_for("d" * 64).parent.mkdir(parents=True, exist_ok=True)
    cache.path_for("c" * 64).rename(cache.path_for("d" * 64))
    assert cache.get("d" * 64, "miss") == "miss"


def test_turned_off_reads_and_writes_nothing(tmp_path, monkeypatch):
    cache = DiskCache("ns", "v1", root=tmp_path)
    cache.put("e" * 64, 1)
    monkeypatch.setenv(diskcache.NO_CACHE_ENV, "1")
    assert cache.get("e" * 64, "miss") == "miss"
    cache.put("f" * 64, 2)
    monkeypatch.delenv(diskcache.NO_CACHE_ENV)
    assert cache.get("f" * 64, "miss") == "miss"
    assert cache.get("e" * 64) == 1


def test_home_follows_the_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(diskcache.CACHE_DIR_ENV, str(tmp_path / "c"))
    assert diskcache.cache_home() == tmp_path / "c"
    assert DiskCache("ns", "v1").directory == tmp_path / "c" / "ns" / "v1"
    monkeypatch.delenv(diskcache.CACHE_DIR_ENV)
    assert diskcache.cache_home() == diskcache.DEFAULT_CACHE_HOME.expanduser()


def test_unsafe_names_are_refused_or_cleaned(tmp_path):
    with pytest.raises(ValueError):
        DiskCache("..", "v1", root=tmp_path)
    assert DiskCache("a/b", "v1", root=tmp_path).namespace == "a_b"


def _writer(root: str, value_len: int, rounds: int) -> None:
    cache = DiskCache("ns", "v1", root=root)
    for i in range(rounds):
        cache.put("0" * 64, bytes([i % 251]) * value_len)


def test_concurrent_writers_never_give_a_partial_read(tmp_path):
    """Two processes rewrite one large entry while this one reads: every read is a whole value."""
    value_len = 2_000_000
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), value_len, 15)) for _ in range(2)]
    for p in procs:
        p.start()
    cache = DiskCache("ns", "v1", root=tmp_path)
    path = cache.path_for("0" * 64)
    reads = 0
    # read the file directly (`get` would take a torn file for a miss): once it exists, every
    # open sees one whole pickle, because writers only ever rename finished files into place
    deadline = time.monotonic() + 60
    while (any(p.is_alive() for p in procs) or reads == 0) and time.monotonic() < deadline:
        if not path.exists():
            continue
        with open(path, "rb") as f:
            key, value = pickle.load(f)
        reads += 1
        assert key == "0" * 64 and len(value) == value_len and value.count(value[:1]) == value_len
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reads > 0
    assert not list(cache.path_for("0" * 64).parent.glob("*.tmp"))


def test_usage_and_clear(tmp_path):
    DiskCache("maptab-perception", "v1", root=tmp_path).put("1" * 64, "x")
    DiskCache("maptab-perception", "v2", root=tmp_path).put("2" * 64, "y")
    DiskCache("other", "v1", root=tmp_path).put("3" * 64, "z")
    rows = {(u.namespace, u.version): u.entries for u in diskcache.usage(tmp_path)}
    assert rows == {("maptab-perception", "v1"): 1, ("maptab-perception", "v2"): 1, ("other", "v1"): 1}
    assert diskcache.clear(tmp_path, "maptab-perception") == 2
    assert [u.namespace for u in diskcache.usage(tmp_path)] == ["other"]
    assert diskcache.clear(tmp_path) == 1
    assert diskcache.usage(tmp_path) == []


def test_cache_cli(tmp_path, capsys):
    DiskCache("maptab-perception", "v1", root=tmp_path).put("1" * 64, pickle.dumps("x"))
    assert cache_cli.main(["path", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path)
    assert cache_cli.main(["info", "--dir", str(tmp_path)]) == 0
    assert "maptab-perception/v1: 1 entries" in capsys.readouterr().out
    assert cache_cli.main(["clear", "--dir", str(tmp_path)]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert cache_cli.main(["info", "--dir", str(tmp_path)]) == 0
    assert "empty" in capsys.readouterr().out
    assert cache_cli.main(["bogus"]) == 2


def test_code_version_follows_the_label_and_every_source(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = diskcache.code_version("v1", [a, b], ("pytest",))
    assert first.startswith("v1-") and first == diskcache.code_version("v1", [a, b], ("pytest",))
    assert diskcache.code_version("v2", [a, b], ("pytest",)) != first  # a hand-bumped number
    b.write_text("y = 3\n")
    assert diskcache.code_version("v1", [a, b], ("pytest",)) != first  # an edit of any source
