"""The warehouse stores what it is given, verbatim, and never half a sample."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from geoeval.core.analysis.reports import write_per_sample_parquet
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.warehouse.rows import INTEGRITY, seal_problem
from geoeval.core.warehouse.schema import SCHEMA_VERSION, SCORE_COLUMNS
from geoeval.core.warehouse.store import Warehouse

HOSTILE = "x'); DROP TABLE scores; --"


def result(sample_id: str, run_hash: str = "run1", epoch: int = 1, **overrides) -> SampleResult:
    fields = dict(
        run_hash=run_hash,
        sample_id=sample_id,
        epoch=epoch,
        model="model-a",
        answer=f"answer {sample_id}",
        explanation="because",
        scores={"ema": 1.0, "pma": 0.5},
        dims=Dimensions(
            suite="maptab",
            task_family="rp",
            task="map_only",
            level="easy",
            setting="map+edge_tab",
            capabilities=("routing", "reading"),
            extra={"query_level": "q2", "resolution": "1/2"},
        ),
        input_tokens=10,
        output_tokens=3,
    )
    fields.update(overrides)
    return SampleResult(**fields)


@pytest.fixture
def wh(tmp_path: Path):
    with Warehouse(tmp_path / "nested" / "dir" / "results.duckdb") as warehouse:
        yield warehouse


def count(wh: Warehouse, table: str) -> int:
    return wh.query(f"SELECT count(*) FROM {table}")[1][0][0]


def test_creates_parent_dirs_and_records_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "r.duckdb"
    with Warehouse(path) as wh:
        assert wh.query("SELECT max(version) FROM schema_version")[1] == [(SCHEMA_VERSION,)]
    assert path.is_file()


def test_round_trip_rebuilds_every_field_in_order(wh: Warehouse, tmp_path: Path) -> None:
    written = [
        result("s2"),
        result("s1", epoch=2, error="tool failed", scores={"ema": 0.0}),
        result("s1", dims=Dimensions(suite="maptab")),  # empty dims, no extra
        result("s3", scores={}),
    ]
    wh.write_results(written)
    read = wh.results("run1")
    assert [(r.sample_id, r.epoch) for r in read] == [("s1", 1), ("s1", 2), ("s2", 1), ("s3", 1)]
    assert read == [written[2], written[1], written[0], written[3]]
    assert wh.results("other-run") == []


def test_results_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "r.duckdb"
    with Warehouse(path) as wh:
        wh.write_results([result("s1")])
    with Warehouse(path) as wh:
        assert wh.results("run1") == [result("s1")]
    with Warehouse(path, read_only=True) as wh:
        assert wh.finished_keys("run1") == {("s1", 1)}


def test_finished_keys_for_resume(wh: Warehouse) -> None:
    wh.write_results([result("a"), result("a", epoch=2), result("b", error="timeout"), result("c", "run2")])
    assert wh.finished_keys("run1") == {("a", 1), ("a", 2), ("b", 1)}
    assert wh.finished_keys("run1", include_errors=False) == {("a", 1), ("a", 2)}
    assert wh.finished_keys("run2") == {("c", 1)}
    assert wh.finished_keys("nope") == set()


def test_a_write_that_fails_midway_leaves_no_half_sample(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    wh.write_results([result("kept", scores={"ema": 1.0})])

    def scores_insert_fails(self: Warehouse, con) -> None:
        # inside the transaction: the batch's sample rows are in ("new" and the rewritten
        # "kept"), and the old scores of "kept" are already deleted
        assert self.finished_keys("run1") == {("new", 1), ("kept", 1)}
        assert self.query("SELECT count(*) FROM scores")[1] == [(0,)]
        raise RuntimeError("disk full")

    monkeypatch.setattr(Warehouse, "_insert_scores", scores_insert_fails)
    with pytest.raises(RuntimeError, match="disk full"):
        wh.write_results([result("new"), result("kept", scores={"ema": 0.0})])
    monkeypatch.undo()

    # nothing of the failed batch, and the rewrite it attempted did not touch the stored sample
    assert wh.finished_keys("run1") == {("kept", 1)}
    assert wh.results("run1")[0].scores == {"ema": 1.0}
    assert count(wh, "scores") == 1
    # the connection is usable afterwards (no transaction left open)
    wh.write_results([result("new")])
    assert wh.finished_keys("run1") == {("kept", 1), ("new", 1)}


def test_a_bad_value_anywhere_in_a_batch_stores_nothing(wh: Warehouse) -> None:
    bad = SampleResult.model_construct(**{**result("bad").__dict__, "scores": {"ema": "high"}})
    with pytest.raises(Exception):  # noqa: B017 - Arrow or DuckDB may refuse the value; the point is that nothing is stored
        wh.write_results([result("good"), bad])
    assert count(wh, "samples") == 0 and count(wh, "scores") == 0


def test_rewriting_a_sample_replaces_it_and_its_whole_score_set(wh: Warehouse) -> None:
    wh.write_results([result("s1"), result("s2")])
    wh.write_results([result("s1"), result("s2")])
    assert count(wh, "samples") == 2 and count(wh, "scores") == 4
    assert wh.results("run1") == [result("s1"), result("s2")]

    wh.write_results([result("s1", answer="second", scores={"ds": 3.0})])
    stored = wh.results("run1")[0]
    assert stored.answer == "second"
    assert stored.scores == {"ds": 3.0}  # ema and pma of the first write are gone
    assert count(wh, "scores") == 3

    # duplicates inside one batch: the last one wins
    wh.write_results([result("s2", answer="first"), result("s2", answer="last")])
    assert wh.results("run1")[1].answer == "last"


def test_hostile_strings_are_stored_verbatim(wh: Warehouse) -> None:
    hostile = result(
        HOSTILE,
        answer=HOSTILE,
        scores={HOSTILE: 1.0},
        dims=Dimensions(suite=HOSTILE, level=HOSTILE, capabilities=(HOSTILE,), extra={HOSTILE: HOSTILE}),
    )
    wh.register_run(HOSTILE, suite=HOSTILE, model=HOSTILE, config={HOSTILE: HOSTILE})
    wh.write_results([hostile, result(HOSTILE, run_hash=HOSTILE)])
    wh.set_run_status(HOSTILE, HOSTILE, mlflow_run_id=HOSTILE)

    tables = {row[0] for row in wh.query("SELECT table_name FROM information_schema.tables")[1]}
    assert {"runs", "samples", "scores", "schema_version"} <= tables
    assert wh.results("run1") == [hostile]
    assert wh.finished_keys("run1") == {(HOSTILE, 1)}
    assert wh.finished_keys(HOSTILE) == {(HOSTILE, 1)}
    assert wh.scores_frame("run1")["metric"].tolist() == [HOSTILE]
    run = wh.runs(HOSTILE)[0]
    assert (run["status"], run["mlflow_run_id"], run["config"]) == (
        HOSTILE,
        HOSTILE,
        {HOSTILE: HOSTILE},
    )
    columns, rows = wh.query("SELECT sample_id FROM samples WHERE run_hash = ?", [HOSTILE])
    assert (columns, rows) == (["sample_id"], [(HOSTILE,)])


def test_register_run_upserts_and_keeps_created_at(wh: Warehouse) -> None:
    wh.register_run("h", suite="maptab", model="m1", config={"seed": 1}, experiment="exp")
    first = wh.runs()[0]
    assert (first["status"], first["experiment"]) == ("registered", "exp")
    assert first["config"] == {"seed": 1}
    wh.set_run_status("h", "running", mlflow_run_id="mlf-1")
    wh.register_run("h", suite="maptab", model="m2", config={"seed": 2, "path": Path("/x")})
    second = wh.runs()[0]
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] >= first["updated_at"]
    assert (second["model"], second["config"]) == ("m2", {"seed": 2, "path": "/x"})
    # status, MLflow id and experiment survive a re-registration (a resume)
    assert (second["status"], second["mlflow_run_id"], second["experiment"]) == (
        "running",
        "mlf-1",
        "exp",
    )
    wh.set_run_status("h", "finished")
    assert (wh.runs()[0]["status"], wh.runs()[0]["mlflow_run_id"]) == ("finished", "mlf-1")
    assert count(wh, "runs") == 1


def test_set_run_status_of_an_unknown_run_is_a_bug(wh: Warehouse) -> None:
    with pytest.raises(LookupError, match="register_run"):
        wh.set_run_status("nope", "finished")


def test_runs_lists_registered_runs_and_runs_with_samples(wh: Warehouse) -> None:
    wh.register_run("registered", suite="lifeplanner", model="m", config={})
    wh.write_results([result("s1", run_hash="unregistered"), result("s2", run_hash="unregistered")])
    runs = {run["run_hash"]: run for run in wh.runs()}
    assert runs["registered"]["n_samples"] == 0
    assert (runs["unregistered"]["suite"], runs["unregistered"]["model"]) == ("maptab", "model-a")
    assert runs["unregistered"]["n_samples"] == 2
    assert [run["run_hash"] for run in wh.runs("maptab")] == ["unregistered"]


def test_scores_frame_has_a_row_per_score_with_dimensions_and_the_runs_model(
    wh: Warehouse,
) -> None:
    wh.register_run("run1", suite="maptab", model="run-model", config={})
    wh.write_results([result("s1", model=""), result("s2", error="boom"), result("t", "run2")])
    frame = wh.scores_frame("run1")
    assert list(frame.columns) == list(SCORE_COLUMNS)
    assert len(frame) == 4
    assert set(frame["model"]) == {"run-model"}
    first = frame.iloc[0]
    assert (first["sample_id"], first["metric"], first["value"]) == ("s1", "ema", 1.0)
    assert (first["level"], first["setting"], list(first["capabilities"])) == (
        "easy",
        "map+edge_tab",
        ["routing", "reading"],
    )
    assert frame.loc[frame["sample_id"] == "s2", "error"].tolist() == ["boom", "boom"]
    assert len(wh.scores_frame(["run1", "run2"])) == 6
    assert len(wh.scores_frame()) == 6
    assert wh.scores_frame("run2")["model"].tolist() == ["model-a", "model-a"]
    empty = wh.scores_frame("none")
    assert list(empty.columns) == list(SCORE_COLUMNS) and empty.empty


def test_export_parquet_matches_the_in_memory_writer(wh: Warehouse, tmp_path: Path) -> None:
    results = [result("s2"), result("s1", error="e"), result(HOSTILE)]
    wh.write_results(results + [result("x", run_hash="other")])
    exported = wh.export_parquet("run1", tmp_path / "it's here" / "scores.parquet")
    written = write_per_sample_parquet(results, tmp_path / "mem.parquet")
    a, b = pq.read_table(exported), pq.read_table(written)
    assert a.column_names == list(SCORE_COLUMNS)
    assert [str(f.type) for f in a.schema] == [str(f.type) for f in b.schema]
    assert a.to_pylist() == b.to_pylist()
    assert a.num_rows == 6 and set(a.column("run_hash").to_pylist()) == {"run1"}


def test_query_returns_columns_and_rows_and_bad_sql_is_a_user_error(wh: Warehouse) -> None:
    wh.write_results([result("s1")])
    assert wh.query("SELECT sample_id, epoch FROM samples") == (["sample_id", "epoch"], [("s1", 1)])
    with pytest.raises(GeoevalError, match="SQL failed: .*syntax error"):
        wh.query("SELEC 1")
    with pytest.raises(GeoevalError, match="SQL failed: Catalog Error"):
        wh.query("SELECT * FROM no_such_table")


def test_opening_a_missing_or_foreign_or_newer_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(GeoevalError, match="no results database"):
        Warehouse(tmp_path / "missing.duckdb", read_only=True)
    assert not (tmp_path / "missing.duckdb").exists()

    foreign = tmp_path / "foreign.duckdb"
    duckdb.connect(str(foreign)).execute("CREATE TABLE t (a INT)").close()
    with pytest.raises(GeoevalError, match="not a geoeval results database"):
        Warehouse(foreign, read_only=True)

    not_duckdb = tmp_path / "text.duckdb"
    not_duckdb.write_text("hello, I am not a database\n" * 100)
    with pytest.raises(GeoevalError, match="cannot open"):
        Warehouse(not_duckdb)

    newer = tmp_path / "newer.duckdb"
    with Warehouse(newer) as wh:
        wh.query("INSERT INTO schema_version VALUES (?, now())", [SCHEMA_VERSION + 1])
    with pytest.raises(GeoevalError, match="upgrade geoeval"):
        Warehouse(newer)


@pytest.mark.slow
def test_processes_share_a_warehouse_and_a_reader_reads_while_they_write(tmp_path: Path) -> None:
    path = tmp_path / "shared.duckdb"
    script = textwrap.dedent(
        f"""
        import sys
        from geoeval.core.records import Dimensions, SampleResult
        from geoeval.core.warehouse.store import Warehouse
        run = sys.argv[1]
        with Warehouse({str(path)!r}, config_key="results_db=") as wh:
            wh.register_run(run, suite="maptab", model="m", config={{}})
            for i in range(40):
                wh.write_results([SampleResult(run_hash=run, sample_id=str(i), scores={{"ema": 1.0}},
                                               dims=Dimensions(suite="maptab"))])
        """
    )
    with Warehouse(path) as wh:  # held open by this process the whole time
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, f"run{i}"],
                cwd=Path(__file__).resolve().parents[2],
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(3)
        ]
        reads = 0
        while any(p.poll() is None for p in procs):
            with Warehouse(path, read_only=True) as reader:  # `geoeval results` while they write
                reader.runs()
            reads += 1
            time.sleep(0.05)  # a person polling `geoeval results`, not a busy loop
        errors = [p.stderr.read() for p in procs]
        assert all(p.returncode == 0 for p in procs), errors
        assert reads > 0
        counts = wh.query("SELECT run_hash, count(*) FROM samples GROUP BY 1 ORDER BY 1")[1]
    assert counts == [("run0", 40), ("run1", 40), ("run2", 40)]  # nothing lost, nothing twice


def test_another_duckdb_client_holding_the_file_names_the_config_key(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    Warehouse(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('ready', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(GeoevalError, match=r"another program holds it open.*results_db="):
            Warehouse(path, config_key="results_db=")
    finally:
        holder.kill()
        holder.wait()


def test_a_reader_sees_what_an_open_writer_of_this_process_wrote(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "r.duckdb") as wh:
        wh.register_run("run1", suite="maptab", model="m", config={})
        with Warehouse(tmp_path / "r.duckdb", read_only=True) as reader:
            assert [r["run_hash"] for r in reader.runs()] == ["run1"]


def test_in_memory_warehouse() -> None:
    with Warehouse(":memory:") as wh:
        wh.write_results([result("s1")])
        assert wh.finished_keys("run1") == {("s1", 1)}


def test_close_is_idempotent_and_a_closed_warehouse_refuses_work(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "r.duckdb")
    wh.close()
    wh.close()
    with pytest.raises(RuntimeError, match="closed"):
        wh.finished_keys("run1")


def test_held_shares_one_connection_and_other_threads_wait_for_it(tmp_path: Path, monkeypatch) -> None:
    import threading

    import geoeval.core.warehouse.store as warehouse_module

    opened: list[str] = []
    real_connect = duckdb.connect

    def counting_connect(*args, **kwargs):
        opened.append(threading.current_thread().name)
        return real_connect(*args, **kwargs)

    with Warehouse(tmp_path / "r.duckdb") as wh:
        monkeypatch.setattr(warehouse_module.duckdb, "connect", counting_connect)
        written = threading.Event()

        def writer() -> None:
            wh.write_results([result("s2")])
            written.set()

        with wh.held():
            wh.register_run("run1", suite="maptab", model="m", config={})
            wh.write_results([result("s1")])
            other = threading.Thread(target=writer, name="other")
            other.start()
            assert not written.wait(0.3)  # the other thread's write waits for the held block
            assert wh.finished_keys("run1") == {("s1", 1)}
            wh.set_run_status("run1", "finished")
        other.join(5)
        assert written.is_set()
        assert opened == ["MainThread", "other"]  # four operations, one open; then the waiting thread's
        assert wh.finished_keys("run1") == {("s1", 1), ("s2", 1)}
        assert [r["status"] for r in wh.runs()] == ["finished"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:4096] + b"\0" * (len(data) - 4096),  # blocks overwritten: "Corrupt ... in block"
        lambda data: b"not a database at all " * 100,  # another kind of file
    ],
    ids=["zeroed blocks", "not a DuckDB file"],
)
def test_a_damaged_file_is_named_damaged_not_locked(tmp_path: Path, damage) -> None:
    path = tmp_path / "results.duckdb"
    with Warehouse(path) as wh:
        wh.write_results([result(f"s{i}") for i in range(50)])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(GeoevalError) as err, Warehouse(path, config_key="results_db=") as wh:
        wh.write_results([result("after")])
    message = str(err.value)
    assert "damaged" in message and "results_db=" in message and "another program" not in message


def test_a_cut_short_file_that_still_opens_is_found_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "results.duckdb"
    with Warehouse(path) as wh:
        wh.write_results([result(f"s{i}", answer="x" * 200) for i in range(20000)])
        wh.check_readable()  # an intact file passes, and the check changes nothing
        assert count(wh, "samples") == 20000 and count(wh, "scores") == 40000
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 5])  # a copy or a download cut off: the header survives
    wh = Warehouse(path, config_key="results_db=")  # it opens ...
    with pytest.raises(GeoevalError, match=r"the file is damaged .*results_db="):
        wh.check_readable()  # ... and is named damaged before a run evaluates anything


def _call(digest: str, replayed: bool = False) -> dict:
    return {"role": "agent", "model": "m", "digest": digest, "output": {"completion": digest}, "replayed": replayed}


def _unsealed(calls: list[dict]) -> list[dict]:
    return [{k: v for k, v in call.items() if k != INTEGRITY} for call in calls]


def test_trajectories_store_the_calls_of_a_batch_that_were_made_and_the_last_of_a_sample_wins(wh) -> None:
    made = [_call("q")]
    replayed = [_call("q", replayed=True)]
    wh.write_results(
        [
            result("1", trajectory=made),
            result("2", trajectory=replayed),  # nothing new: its stored calls stay as they are
            result("3", run_hash="run2", trajectory=[_call("first")]),
            result("3", run_hash="run3", trajectory=[*made, _call("second")]),
            result("4"),  # no calls recorded
        ],
        generation_hash="gen1",
    )
    stored = wh.trajectories("gen1", [("1", 1), ("2", 1), ("3", 1), ("4", 1)])
    assert {key: _unsealed(calls) for key, calls in stored.items()} == {
        ("1", 1): made,
        ("3", 1): [*made, _call("second")],
    }
    assert all(seal_problem(calls) is None for calls in stored.values())  # each call sealed where it stands
    assert wh.query("SELECT sample_id, run_hash, n_calls FROM trajectories ORDER BY sample_id")[1] == [
        ("1", "run1", 1),
        ("3", "run3", 2),
    ]
    wh.write_results([result("1", trajectory=[_call("again")])], generation_hash="gen1")
    assert _unsealed(wh.trajectories("gen1", [("1", 1)])[("1", 1)]) == [_call("again")]
    wh.write_results([result("5", trajectory=made)])  # no generation hash: nothing to key them by
    assert count(wh, "trajectories") == 2


def test_an_edited_cut_or_unreadable_trajectory_fails_its_check_naming_why(wh) -> None:
    wh.write_results([result("1", trajectory=[_call("a"), _call("b")])], generation_hash="g")
    [calls] = wh.trajectories("g", [("1", 1)]).values()
    edited = [calls[0], {**calls[1], "output": {"completion": "forged"}}]
    assert seal_problem(edited) == "call 2 of 2 fails its integrity check (edited, cut short or reordered since stored)"
    assert seal_problem(calls[:1]) is not None and seal_problem(calls[::-1]) is not None  # cut short, reordered
    assert seal_problem(_unsealed(calls)) is None  # stored by an older geoeval: no digest to check
    wh.query("UPDATE trajectories SET calls = '{\"not\": \"a list\"}' WHERE sample_id = '1'")
    assert wh.read_trajectories("g", [("1", 1)]) == (
        {},
        {("1", 1): "its stored JSON is not a list of model calls (each with its request digest and reply)"},
    )
    assert wh.trajectories("g", [("1", 1)]) == {}  # what cannot be read is left out, never a traceback
