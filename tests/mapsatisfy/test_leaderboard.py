"""The Table 1/2 layout across runs, read from the warehouse: hand-computed means, and the
`mapsatisfy` experiment's setting x thinking axes run end to end into it."""

from __future__ import annotations

import math

import pytest
from hydra import compose, initialize_config_module

from geoeval.core.config.validate import validate_config
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.registry import load_plugins
from geoeval.core.run.job import run_job
from geoeval.core.warehouse.store import Warehouse
from geoeval.suites.mapsatisfy.reports import leaderboard_frame, leaderboard_table
from geoeval.suites.mapsatisfy.suite import thinking_of


def _result(run, sid, model, thinking, setting="normal", error=None, **scores):
    base = {"ecr": 1.0, "iisr": 1.0, "ar": 1.0, "ts": 1.0, "ifs": 1.0, "eff": 1.0, "ses": 1.0}
    return SampleResult(
        run_hash=run,
        sample_id=sid,
        model=model,
        scores={**base, **scores},
        error=error,
        dims=Dimensions(suite="mapsatisfy", setting=setting, extra={"thinking": thinking}),
    )


def test_one_row_per_model_with_thinking_off_and_on_columns(tmp_path):
    db = tmp_path / "results.duckdb"
    with Warehouse(db) as wh:
        wh.write_results(
            [
                _result("r1", "a", "m1", "off", ecr=0.0),
                _result("r1", "b", "m1", "off", ecr=1.0, eff=math.nan),
                _result("r1", "c", "m1", "off", ecr=1.0, error="boom"),  # errored: left out
                _result("r2", "a", "m1", "on", ecr=0.25),
                _result("r3", "a", "m2", "off", ts=0.5),
                _result("r4", "a", "m2", "off", setting="profile", ts=0.125),
            ]
        )
    paths = leaderboard_table(db, tmp_path / "out")
    assert [p.name for p in paths] == ["leaderboard.md", "leaderboard.png"]
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = paths[0].read_text(encoding="utf-8")
    normal, profile = text.split("## Setting: profile")
    assert "## Setting: normal" in normal
    assert "| model | n (off) | n (on) | ECR (off) | ECR (on) | IISR (off) |" in normal
    # m1: ECR off = mean(0, 1) = 0.5 (the errored case is out), on = 0.25; Eff off skips the NaN
    assert "| m1 | 2 | 1 | 0.5000 | 0.2500 | 1.0000 | 1.0000 |" in normal
    assert "| m2 | 1 | - | 1.0000 | - |" in normal  # no thinking-on run: a dash
    frame = leaderboard_frame(db)
    eff = frame[(frame.model == "m1") & (frame.thinking == "off") & (frame.metric == "eff")]
    assert eff.value.item() == 1.0 and eff.n.item() == 2  # n counts cases; the NaN is skipped in the mean
    assert "| m2 | 1 | 1.0000 | 1.0000 | 1.0000 | 0.1250 |" in profile


def test_an_empty_warehouse_says_so(tmp_path):
    db = tmp_path / "results.duckdb"
    Warehouse(db).close()
    md, png = leaderboard_table(db, tmp_path / "out")
    assert "No MapSatisfy runs" in md.read_text(encoding="utf-8") and png.is_file()


def _spec(tmp_path, *overrides):
    load_plugins()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "+experiment=mapsatisfy",
                "tracking=none",
                f"results_db={tmp_path / 'results.duckdb'}",
                f"work_dir={tmp_path / 'work'}",
                f"log_dir={tmp_path / 'logs'}",
                "env.n=6",
                "env.embedder=hashing",
                f"env.out_dir={tmp_path / 'generated'}",
                *overrides,
            ],
        )
    return validate_config(cfg)


@pytest.mark.slow
def test_the_mapsatisfy_experiment_sweeps_setting_and_thinking_into_the_leaderboard(tmp_path):
    points = [
        ("oracle", "normal", "none"),
        ("oracle", "normal", "medium"),
        ("clarify_baseline", "normal", "none"),
        ("oracle", "profile", "none"),
    ]
    for model, setting, effort in points:
        spec = _spec(
            tmp_path, f"model={model}", f"suite.setting={setting}", f"++model.config.reasoning_effort={effort}"
        )
        assert spec.experiment_name == "mapsatisfy"
        assert thinking_of(spec) == ("off" if effort == "none" else "on")
        outcome = run_job(spec, out_dir=tmp_path / f"{model}_{setting}_{effort}", progress=False)
        assert {r.dims.setting for r in outcome.results} == {setting}
    frame = leaderboard_frame(tmp_path / "results.duckdb", experiment="mapsatisfy")
    oracle = frame[(frame.model == "geoeval/oracle") & (frame.setting == "normal") & frame.metric.isin(["ecr", "ts"])]
    assert set(oracle.thinking) == {"off", "on"} and (oracle.value == 1.0).all() and (oracle.n == 6).all()
    text = leaderboard_table(tmp_path / "results.duckdb", tmp_path / "board")[0].read_text(encoding="utf-8")
    assert "| geoeval/clarify_baseline | 6 | - | 0.0000 | - |" in text
    assert "## Setting: profile" in text
