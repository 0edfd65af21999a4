"""The trajectory journal (issue 43): each answered call is on disk before Inspect sees it; a torn
last line is skipped, an edited one refused, and a file is deleted only once the warehouse holds
every sample in it and no live job writes it."""

from __future__ import annotations

import json

from geoeval.core.run.journal import JOURNALED, Journal, journal_problem, read_journals, settle


def call(digest: str) -> dict:
    return {"role": "agent", "model": "m", "digest": digest, "output": {"completion": digest}}


def test_calls_are_on_disk_as_written_and_read_back_per_sample(tmp_path):
    journal = Journal(tmp_path / "g")
    journal.write(("s1", 1), call("a"))
    assert journal.path.read_text().count("\n") == 1  # flushed at once: a kill -9 now loses nothing
    journal.write(("s2", 1), call("b"))
    journal.write(("s1", 1), call("c"))
    journal.close()
    found = read_journals(tmp_path / "g", {("s1", 1)})
    assert [c["digest"] for c in found[("s1", 1)]] == ["a", "c"] and all(c[JOURNALED] for c in found[("s1", 1)])
    assert journal_problem(found[("s1", 1)]) is None


def test_a_torn_line_is_skipped_and_an_edited_one_refused(tmp_path):
    journal = Journal(tmp_path / "g")
    journal.write(("s1", 1), call("a"))
    journal.close()
    with open(journal.path, "a") as handle:
        handle.write('{"sample_id": "s1", "epoch": 1, "call": {"dig')  # killed mid-line
    assert len(read_journals(tmp_path / "g")[("s1", 1)]) == 1
    entry = json.loads(journal.path.read_text().splitlines()[0])
    entry["call"]["output"] = {"completion": "forged"}
    journal.path.write_text(json.dumps(entry) + "\n")
    assert "fails its integrity check" in journal_problem(read_journals(tmp_path / "g")[("s1", 1)])


def test_secrets_echoed_by_the_model_are_not_journaled(tmp_path):
    from geoeval.core.config.scrub import remember_secrets

    remember_secrets({"sk-journal-test-secret-123456"})
    journal = Journal(tmp_path / "g")
    journal.write(("s1", 1), {**call("a"), "output": {"completion": "my key is sk-journal-test-secret-123456"}})
    journal.close()
    assert "sk-journal-test-secret-123456" not in journal.path.read_text()


def test_settle_deletes_a_file_only_when_every_sample_is_stored_and_nobody_writes_it(tmp_path):
    folder = tmp_path / "g"
    old = Journal(folder)
    old.write(("s1", 1), call("a"))
    old.write(("s2", 1), call("b"))
    old.close()
    live = Journal(folder)
    live.write(("s3", 1), call("c"))  # still open: another job's
    settle(folder, lambda: {("s1", 1)})
    assert old.path.exists()  # s2 is not stored yet: a later run replays it
    settle(folder, lambda: {("s1", 1), ("s2", 1), ("s3", 1)})
    assert not old.path.exists() and live.path.exists()  # the live one is left alone
    live.close()
    settle(folder, lambda: {("s3", 1)}, own=live)
    assert not folder.exists()
