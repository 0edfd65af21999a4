"""`geoeval results`: the leaderboard, raw SQL, and one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from geoeval.cli.results import main, run_labels
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.warehouse.store import Warehouse


def r(run_hash, sample_id, model, scores, level, query_level="q1") -> SampleResult:
    # the strong model is priced ($0.01 a sample, 1,500 tokens sent); the weak one has no price
    priced = model == "strong"
    return SampleResult(
        run_hash=run_hash,
        sample_id=sample_id,
        model=model,
        scores=scores,
        dims=Dimensions(suite="maptab", level=level, extra={"query_level": query_level}),
        cost_usd=0.01 if priced else None,
        usage={model: {"role": "agent", "input": 1000, "output": 500, "calls": 1}},
    )


WEAK = "aaaaaaaaaaaa1111"  # ema 0.25, ds 1
STRONG = "bbbbbbbbbbbb2222"  # ema 0.75, ds 2


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "geoeval.duckdb"
    with Warehouse(path) as wh:
        wh.register_run(
            WEAK,
            suite="maptab",
            model="weak",
            config={"suite": {"resolution": 0.5}, "seed": 1, "metrics": {"sum_metrics": ["ds"]}},
        )
        wh.register_run(
            STRONG,
            suite="maptab",
            model="strong",
            config={"suite": {"resolution": 1}, "metrics": {"sum_metrics": ["ds"]}},
        )
        wh.register_run("lp1", suite="lifeplanner", model="weak", config={"label": "baseline"})
        wh.write_results(
            [
                r(WEAK, "s1", "weak", {"ema": 0.5, "ds": 1.0}, "easy"),
                r(WEAK, "s2", "weak", {"ema": 0.0, "ds": 0.0}, "hard", "q2"),
                r(STRONG, "s1", "strong", {"ema": 1.0, "ds": 1.0}, "easy"),
                r(STRONG, "s2", "strong", {"ema": 0.5, "ds": 1.0}, "hard", "q2"),
            ]
        )
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_default_leaderboard_one_row_per_run_best_first(db: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "--db", str(db), "--suite", "maptab", "--metric", "ema",
                             "--metric", "ds")  # fmt: skip
    assert (code, err) == (0, "")
    assert out == (
        "| run          | model  | suite  | resolution |   ema |    ds |   n | cost_usd | tokens |\n"
        "| ------------ | ------ | ------ | ---------- | ----: | ----: | --: | -------: | -----: |\n"
        "| bbbbbbbbbbbb | strong | maptab | 1          | 0.750 | 2.000 |   2 |    0.020 |   3000 |\n"
        "| aaaaaaaaaaaa | weak   | maptab | 1/2        | 0.250 | 1.000 |   2 |        – |   3000 |\n"
    )


def test_all_runs_and_all_metrics_by_default(db: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "--db", str(db), "--format", "json")
    rows = json.loads(out)
    assert code == 0
    # every stored metric, MapTab's headline metric (ema) first; runs sort by it, best first
    assert list(rows[0]) == ["run", "model", "suite", "label", "resolution", "ema", "ds", "n", "cost_usd", "tokens"]
    assert [(row["run"], row["ema"], row["ds"], row["n"]) for row in rows] == [
        ("bbbbbbbbbbbb", 0.75, 2.0, 2),
        ("aaaaaaaaaaaa", 0.25, 1.0, 2),
        ("lp1", None, None, 0),  # registered, nothing stored yet
    ]
    assert rows[2]["label"] == "baseline"


def test_by_run_splits_each_run(db: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "--db", str(db), "--suite", "maptab", "--metric", "ema",
                           "--by", "run,level", "--format", "csv")  # fmt: skip
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(row["run"], row["level"], row["ema"], row["n"], row["runs"]) for row in rows] == [
        ("aaaaaaaaaaaa", "easy", "0.5", "1", "1"),
        ("aaaaaaaaaaaa", "hard", "0.0", "1", "1"),
        ("bbbbbbbbbbbb", "easy", "1.0", "1", "1"),
        ("bbbbbbbbbbbb", "hard", "0.5", "1", "1"),
    ]
    code, out, _ = run_cli(capsys, "--db", str(db), "--suite", "maptab", "--metric", "ds",
                           "--by", "run,query_level", "--format", "json")  # fmt: skip
    assert [(row["run"], row["query_level"], row["ds"]) for row in json.loads(out)] == [
        ("aaaaaaaaaaaa", "q1", 1.0),
        ("aaaaaaaaaaaa", "q2", 0.0),
        ("bbbbbbbbbbbb", "q1", 1.0),
        ("bbbbbbbbbbbb", "q2", 1.0),
    ]


def test_by_groups_across_runs_once_per_value(db: Path, capsys) -> None:
    """Two runs of one model at two resolutions pool under `--by model`; `--by model,resolution`
    keeps them apart; each key is one column, never repeated."""
    with Warehouse(db) as wh:
        third = "cccccccccccc3333"  # the weak model again, at full resolution: ema 1.0 on s1
        wh.register_run(third, suite="maptab", model="weak", config={"suite": {"resolution": 1}})
        wh.write_results([r(third, "s1", "weak", {"ema": 1.0, "ds": 1.0}, "easy")])
    code, out, _ = run_cli(capsys, "--db", str(db), "--suite", "maptab", "--metric", "ema",
                           "--by", "model", "--format", "csv")  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and list(rows[0]) == ["model", "ema", "n", "runs"]
    # strong 0.75 over 2 samples; weak (0.5 + 0 + 1.0) / 3 = 0.5 over 2 runs; best first
    assert [(row["model"], row["ema"], row["n"], row["runs"]) for row in rows] == [
        ("strong", "0.75", "2", "1"),
        ("weak", "0.5", "3", "2"),
    ]
    code, out, _ = run_cli(capsys, "--db", str(db), "--suite", "maptab", "--metric", "ema",
                           "--by", "model,resolution", "--format", "csv")  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(row["model"], row["resolution"], row["ema"], row["runs"]) for row in rows] == [
        ("weak", "1", "1.0", "1"),
        ("strong", "1", "0.75", "1"),
        ("weak", "1/2", "0.25", "1"),
    ]  # best first
    code, out, _ = run_cli(capsys, "--db", str(db), "--by", "model,level", "--metric", "ema")
    header = out.splitlines()[0]
    assert header.count("level") == 1 and header.count("model") == 1


def test_sql_prints_a_table(db: Path, capsys) -> None:
    code, out, err = run_cli(
        capsys, "--db", str(db), "--sql",
        "SELECT level, count(*) AS n, sum(value) AS total FROM scores WHERE metric = 'ds' "
        "GROUP BY level ORDER BY level",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out == (
        "| level |   n | total |\n| ----- | --: | ----: |\n| easy  |   2 | 2.000 |\n| hard  |   2 | 1.000 |\n"
    )
    code, out, _ = run_cli(capsys, "--db", str(db), "--sql", "SELECT 1 AS a, 2 AS a",
                           "--format", "json")  # fmt: skip
    assert json.loads(out) == [{"a": 1, "a_2": 2}]


def test_db_from_env_and_default_path(db: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("GEOEVAL_DB", str(db))
    code, out, _ = run_cli(capsys, "--sql", "SELECT count(*) AS runs FROM runs", "--format", "csv")
    assert (code, out) == (0, "runs\n3\n")
    monkeypatch.delenv("GEOEVAL_DB")
    monkeypatch.chdir(db.parent.parent)  # results/geoeval.duckdb under the current dir
    code, out, _ = run_cli(capsys, "--sql", "SELECT count(*) AS runs FROM runs", "--format", "csv")
    assert (code, out) == (0, "runs\n3\n")


def one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_missing_db_is_one_line(tmp_path: Path, capsys) -> None:
    err = one_line_error(*run_cli(capsys, "--db", str(tmp_path / "nope.duckdb")))
    assert "no results database at" in err
    assert not (tmp_path / "nope.duckdb").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sql", "SELEC * FROM runs"], "SQL failed: Parser Error"),
        (["--sql", "SELECT * FROM nowhere"], "SQL failed: Catalog Error"),
        (["--suite", "mapatb"], "no runs of suite 'mapatb'"),
        (["--metric", "emma"], "no scores for metric 'emma': choose from ds, ema"),
        (["--by", "levle"], "unknown dimension 'levle'"),
    ],
)
def test_user_mistakes_are_one_line(db: Path, capsys, args: list[str], message: str) -> None:
    assert message in one_line_error(*run_cli(capsys, "--db", str(db), *args))


def test_the_database_is_opened_read_only(db: Path, capsys) -> None:
    err = one_line_error(*run_cli(capsys, "--db", str(db), "--sql", "DROP TABLE scores"))
    assert "read-only" in err
    with Warehouse(db, read_only=True) as wh:
        assert wh.query("SELECT count(*) FROM scores")[1] == [(8,)]


def test_bad_arguments_return_2_without_exiting(db: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "--db", str(db), "--format", "xml")
    assert code == 2 and "invalid choice" in err


def test_an_empty_database_says_so(tmp_path: Path, capsys) -> None:
    Warehouse(tmp_path / "empty.duckdb").close()
    code, out, err = run_cli(capsys, "--db", str(tmp_path / "empty.duckdb"))
    assert (code, out) == (0, "") and "no runs" in err


def test_metrics_a_run_config_declares_as_totals_are_summed(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.duckdb"
    with Warehouse(path) as wh:
        wh.register_run("h", suite="s", model="m", config={"metrics": {"sum_metrics": ["pts"]}})
        wh.write_results([r("h", "a", "m", {"pts": 2.0, "acc": 1.0}, "easy"),
                          r("h", "b", "m", {"pts": 3.0, "acc": 0.0}, "easy")])  # fmt: skip
    code, out, _ = run_cli(capsys, "--db", str(path), "--format", "json")
    assert code == 0
    assert [(row["acc"], row["pts"]) for row in json.loads(out)] == [(0.5, 5.0)]


def test_run_labels_take_the_shallowest_scalar() -> None:
    config = {"a": {"b": {"setting": "deep"}}, "suite": {"setting": "map", "resolution": 0.125},
              "resolution_list": [0.5], "label": None}  # fmt: skip
    assert run_labels(config) == {"setting": "map", "resolution": "1/8"}


def test_several_warehouses_are_read_together_and_sql_takes_one(db: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "bob" / "geoeval.duckdb"
    with Warehouse(other) as wh:
        wh.register_run("cccccccccccc3333", suite="maptab", model="bob-model", config={"suite": {"resolution": 1}})
        wh.write_results([r("cccccccccccc3333", "s1", "bob-model", {"ema": 1.0, "ds": 1.0}, "easy")])
        # the same run as in the first warehouse: listed once, its samples from the first --db
        wh.register_run(STRONG, suite="maptab", model="strong", config={"suite": {"resolution": 1}})
        wh.write_results([r(STRONG, "s1", "strong", {"ema": 0.0, "ds": 0.0}, "easy")])
    code, out, err = run_cli(capsys, "--db", str(db), "--db", str(other), "--suite", "maptab", "--format", "json")
    assert code == 0
    # the run in both is merged by sample, and said so (s1 in both, with another score in bob's)
    assert err.strip().splitlines() == [
        f"geoeval results: run {STRONG[:12]} is stored in 2 of the warehouses: merged by sample, 2 distinct "
        "sample(s); 1 stored more than once counted once (the first --db's), 1 of them with other scores, "
        "answer or error in a later --db"
    ]
    rows = {row["run"]: row for row in json.loads(out)}
    assert set(rows) == {"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"}
    assert rows["bbbbbbbbbbbb"]["ema"] == 0.75 and rows["cccccccccccc"]["model"] == "bob-model"
    code, _, err = run_cli(capsys, "--db", str(db), "--db", str(other), "--sql", "SELECT 1")
    assert code == 2 and "--sql reads one warehouse" in err


def test_a_run_in_two_warehouses_is_the_union_of_their_samples_each_counted_once(tmp_path: Path, capsys) -> None:
    """Alice and Bob each stored part of one run (the same config), one sample in both: the run is
    shown once with every sample, the shared one counted once, in the table and by level."""
    dbs = []
    for name, samples in (("alice", ["s1", "s2"]), ("bob", ["s2", "s3", "s4"])):
        path = tmp_path / name / "geoeval.duckdb"
        with Warehouse(path) as wh:
            wh.register_run("dddddddddddd4444", suite="maptab", model="m", config={"suite": {"resolution": 1}})
            wh.write_results([r("dddddddddddd4444", s, "m", {"ema": float(s in ("s1", "s3"))}, s) for s in samples])
        dbs += ["--db", str(path)]
    code, out, err = run_cli(capsys, *dbs, "--format", "json")
    assert code == 0
    [row] = json.loads(out)
    assert (row["n"], row["ema"]) == (4, 0.5)  # s1..s4 once each: two of four exact
    assert "merged by sample, 4 distinct sample(s); 1 stored more than once counted once" in err
    assert "other scores" not in err  # s2 is the same in both
    code, out, _ = run_cli(capsys, *dbs, "--by", "level", "--format", "json")
    assert code == 0 and {row["level"]: row["n"] for row in json.loads(out)} == {"s1": 1, "s2": 1, "s3": 1, "s4": 1}


def test_export_writes_every_score_of_every_warehouse_as_parquet(db: Path, tmp_path: Path, capsys) -> None:
    import pandas as pd

    out = tmp_path / "export" / "scores.parquet"
    code, _, err = run_cli(capsys, "export", "--db", str(db), "--output", str(out))
    assert code == 0, err
    frame = pd.read_parquet(out)
    assert len(frame) == 8  # 4 samples x (ema, ds)
    assert {"db", "run_hash", "model", "metric", "value", "level"} <= set(frame.columns)
    assert set(frame["model"]) == {"weak", "strong"}


def test_a_run_that_does_not_depend_on_a_label_is_labelled_all(tmp_path: Path, capsys) -> None:
    """The resolution sweep's Edge_tab-only run (no image: every point reused it) is resolution
    `all`, not the last resolution it was asked with; a run that shows the map keeps its own."""
    from tests.conftest import compose_spec

    path = tmp_path / "r.duckdb"
    edge = compose_spec(tmp_path, "suite.categories=[edge_only]", "suite.resolution=0.03125")
    mapped = compose_spec(tmp_path, "suite.categories=[map_edge]", "suite.resolution=0.03125")
    with Warehouse(path) as wh:
        for name, spec in (("edge", edge), ("map", mapped)):
            wh.register_run(spec.config_hash(), suite="maptab", model=name, config=spec.to_dict())
            wh.write_results([r(spec.config_hash(), "s1", name, {"ema": 1.0, "ds": 1.0}, "easy")])
    code, out, _ = run_cli(capsys, "--db", str(path), "--format", "json")
    assert code == 0
    assert {row["model"]: row["resolution"] for row in json.loads(out)} == {"edge": "all", "map": "1/32"}
    code, out, _ = run_cli(capsys, "--db", str(path))
    assert "| all |" in out.replace("  ", " ") or " all " in out
    assert "resolution `all`: the run does not depend on it" in out
