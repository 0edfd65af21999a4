"""End to end: `python -m geoeval +experiment=mapsatisfy_demo` on the authors' ten demo instances,
offline, through Hydra, Inspect, the dialogue solver, the rules judge and the scorer."""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, geoeval_cmd

pytestmark = pytest.mark.slow  # whole MapSatisfy dialogues through Inspect

RUBRIC_METRICS = ("ecr", "iisr", "ts", "ifs")
ISSUE_CASE = "d3238e6b28bf53f6e7bc30cb1536e2a8"  # issue 11's example: 去万象城附近的充电站


def _run(tmp: Path, demo_dir: Path, model: str, *extra: str, expect: int = 10) -> list:
    from inspect_ai.log import read_eval_log

    tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        geoeval_cmd("+experiment=mapsatisfy_demo", f"model={model}", "tracking=none", f"env.root={demo_dir}", *extra),
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    logs = glob.glob(str(tmp / "logs" / "**" / "*.eval"), recursive=True)
    assert len(logs) == 1, logs
    samples = read_eval_log(logs[0]).samples
    assert samples is not None and len(samples) == expect
    return samples


@pytest.fixture(scope="module")
def oracle_samples(demo_dir, tmp_path_factory):
    return _run(tmp_path_factory.mktemp("oracle"), demo_dir, "oracle")


@pytest.fixture(scope="module")
def clarify_samples(demo_dir, tmp_path_factory):
    return _run(tmp_path_factory.mktemp("clarify"), demo_dir, "clarify_baseline")


def _scores(sample) -> dict[str, float]:
    return sample.scores["geoeval"].value


def test_oracle_calls_every_expected_tool_and_states_only_grounded_facts(oracle_samples):
    # The rules judge reads the answer: the oracle's answer is as good as the demo's recordings
    # allow (search_poi has none, and 37f45712's only search returned no place), so ECR and IISR
    # are 1 only where the responses carry what the factors need; TS is 1 everywhere, and every
    # answer that states a fact states only grounded ones.
    for sample in oracle_samples:
        scores = _scores(sample)
        rules = sample.metadata["mapsatisfy"]["verdicts"]["raw"]["rules"]
        assert scores["ts"] == 1.0, sample.id
        assert scores["ifs"] == (1.0 if rules["substantive"] else 0.0) and not rules["invented"], sample.id
        assert sample.scores["geoeval"].explanation == ""
    by_id = {s.id: _scores(s) for s in oracle_samples}
    # the one answer (SCORING_VERSION 4) recommends the station in 万象城, which is not a 特来电 one:
    # every factor met, the soft 特来电 preference not (no second station is offered for it)
    issue = by_id[ISSUE_CASE]
    assert {m: issue[m] for m in RUBRIC_METRICS if m != "iisr"} == {m: 1.0 for m in RUBRIC_METRICS if m != "iisr"}
    assert 0.8 < issue["iisr"] < 1.0
    assert sum(1 for s in oracle_samples if s.metadata["mapsatisfy"]["verdicts"]["raw"]["rules"]["substantive"]) >= 9


def test_the_oracle_beats_the_clarifying_baseline_on_the_answer_metrics(oracle_samples, clarify_samples):
    clarify = {s.id: _scores(s) for s in clarify_samples}
    for metric in ("ecr", "iisr"):
        oracle_mean = sum(_scores(s)[metric] for s in oracle_samples) / len(oracle_samples)
        assert oracle_mean > sum(c[metric] for c in clarify.values()) / len(clarify), metric


def test_oracle_dialogue_is_recorded_for_scoring(oracle_samples):
    for sample in oracle_samples:
        rec = sample.metadata["mapsatisfy"]
        expected = sample.metadata["instance"]["ground_truth"]["truth_trajectory"]["tool_calls"]["expected_tools"]
        assert [c["name"] for c in rec["tool_calls"]] == list(dict.fromkeys(expected))
        assert all(c["match_type"] in ("exact", "vector", "no_record") for c in rec["tool_calls"])
        assert rec["turns"] == 1 and rec["finished"]  # answered at once, and the user closed
        assert rec["dialogue"][-1][1].endswith("[Finish Conversation]")
        assert rec["tokens"] > 0
    # search_poi has no recordings in the demo: its calls are typed no_record; the rest replay
    kinds = {c["match_type"] for s in oracle_samples for c in s.metadata["mapsatisfy"]["tool_calls"]}
    assert "exact" in kinds and "no_record" in kinds


def test_clarifying_costs_efficiency(oracle_samples, clarify_samples):
    oracle_eff = {s.id: _scores(s)["eff"] for s in oracle_samples}
    for sample in clarify_samples:
        rec = sample.metadata["mapsatisfy"]
        assert rec["turns"] > 1, sample.id  # every demo query leaves out a slot
        assert _scores(sample)["eff"] < oracle_eff[sample.id]
    assert sum(_scores(s)["ts"] for s in clarify_samples) < len(clarify_samples)


def test_the_user_answers_the_clarification_from_the_full_intent(clarify_samples):
    by_id = {s.id: s for s in clarify_samples}
    dialogue = by_id["6016308badc4a6d075d162c90326ef60"].metadata["mapsatisfy"]["dialogue"]
    # 唐山好去处: asked for a time (the intent has none) and then for the travel mode (it has one)
    assert dialogue[1] == ["assistant", "请问您打算什么时间出发？"]
    assert "不确定" in dialogue[2][1]
    assert "自驾" in dialogue[4][1] or "驾车" in dialogue[4][1]


def test_a_missing_demo_folder_is_a_config_error(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("+experiment=mapsatisfy_demo", "model=oracle", "tracking=none", f"env.root={tmp_path / 'nowhere'}"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "env.root" in proc.stderr and "geoeval data fetch mapsatisfy-demo" in proc.stderr


def test_an_unset_root_reads_the_download_cache_or_says_how_to_fill_it(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("+experiment=mapsatisfy_demo", "model=oracle", "tracking=none", "env.root=null"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GEOEVAL_DATA_DIR": str(tmp_path / "empty-cache")},
    )
    assert proc.returncode == 2
    assert "env.root is not set" in proc.stderr and "geoeval data fetch mapsatisfy-demo" in proc.stderr


def test_a_configured_user_model_plays_the_user(demo_dir, tmp_path):
    # An offline agent stands in for the LLM user (geoeval/oracle, given no tools, replies with its
    # no-result line and never writes [Finish Conversation]): the rule-based user would close
    # after the oracle's answer, the `user` role keeps the dialogue going to the turn limit.
    from geoeval.suites.mapsatisfy.agents import _NO_RESULT

    samples = _run(
        tmp_path, demo_dir, "oracle", "suite.user_model=geoeval/oracle", "suite.max_turns=2", "limit=1", expect=1
    )
    rec = samples[0].metadata["mapsatisfy"]
    assert rec["turns"] == 2 and not rec["finished"]
    assert rec["dialogue"][2][1] == _NO_RESULT
    user_calls = [e for e in samples[0].events if e.event == "model" and getattr(e, "role", None) == "user"]
    assert len(user_calls) == 2  # one reply per assistant turn, through the `user` model role
