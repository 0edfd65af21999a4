"""`CopyingMemo`: computed once per key, every caller gets its own copy, bounded; `file_key`
changes when a file is rewritten."""

from __future__ import annotations

import hashlib
import os

from geoeval.core.cache.memo import CopyingMemo, file_digest, file_key


def test_computes_once_and_hands_out_copies():
    memo = CopyingMemo(maxsize=4)
    calls = []

    def build():
        calls.append(1)
        return {"maps": [1, 2, 3]}

    first = memo.get("k", build)
    first["maps"].append(99)  # a caller changing its copy ...
    second = memo.get("k", build)
    assert second == {"maps": [1, 2, 3]}  # ... changes nobody else's
    assert second is not first and len(calls) == 1


def test_keeps_the_most_recently_used():
    memo = CopyingMemo(maxsize=2)
    calls = []
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        memo.get(key, lambda key=key: calls.append(key) or key)
    assert len(memo) == 2
    memo.get("a", lambda: calls.append("a again"))
    memo.get("b", lambda: calls.append("b again") or "b")
    assert calls == ["a", "b", "c", "b again"]


def test_a_failure_is_not_kept():
    memo = CopyingMemo()
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first time")
        return 5

    try:
        memo.get("k", flaky)
    except RuntimeError:
        pass
    assert memo.get("k", flaky) == 5 and len(attempts) == 2


def test_file_key_changes_when_the_file_is_rewritten(tmp_path):
    path = tmp_path / "env.duckdb"
    path.write_bytes(b"one")
    before = file_key(path)
    os.utime(path, ns=(before[1] + 1_000_000, before[1] + 1_000_000))
    assert file_key(path) != before
    assert file_key(tmp_path / "." / "env.duckdb")[0] == before[0]  # one key per file, however named


def test_file_digest_is_the_contents_hash_and_follows_a_rewrite(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.write_bytes(b"pixels")
    b.write_bytes(b"pixels")
    assert file_digest(a) == file_digest(b) == hashlib.sha256(b"pixels").hexdigest()  # not by name or time
    st = a.stat()
    a.write_bytes(b"pixelz")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a new state, whatever the clock's resolution
    assert file_digest(a) == hashlib.sha256(b"pixelz").hexdigest()
