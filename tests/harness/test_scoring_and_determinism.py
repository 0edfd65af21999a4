"""Malformed answers are scored, not raised; tools never put model text into SQL; the same
config gives the same samples byte for byte."""

from __future__ import annotations

import math

import duckdb
from hydra import compose, initialize_config_module

from geoeval.core.config.validate import validate_config
from geoeval.core.registry import get_suite, register_metric
from geoeval.core.scoring import MetricInput, compute_metrics
from geoeval.suites.maptab.env.environment import station_neighbors
from geoeval.suites.maptab.scorers import extract_answer


def spec_for(tmp_path, *overrides):
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "env.n_maps=2",
                "suite.n_per_category=2",
                "tracking=none",
                f"work_dir={tmp_path}/work",
                *overrides,
            ],
        )
    return validate_config(cfg)


def test_malformed_answer_scores_zero_with_reason():
    answer, problem = extract_answer("I'm not sure, sorry.")
    assert answer == "" and "no route" in problem
    values, problems = compute_metrics(
        ["ema", "pma", "ds"],
        MetricInput(answer=answer, raw="I'm not sure", target=["A-B-C"], metadata={"scenario": "metromap"}),
    )
    assert values == {"ema": 0.0, "pma": 0.0, "ds": 0.0}
    assert problems == []


def test_a_failing_metric_is_recorded_not_raised():
    @register_metric("always_breaks", suites=["maptab"])
    def always_breaks(inp):
        raise KeyError("boom")

    values, problems = compute_metrics(
        ["ema", "always_breaks"],
        MetricInput(answer="A-B", raw="A-B", target=["A-B"], metadata={"scenario": "metromap"}),
    )
    # a metric that raises has no value (NaN, never a 0) and its failure makes the sample an error
    assert values["ema"] == 1.0 and math.isnan(values["always_breaks"])
    assert "always_breaks" in problems[0] and "boom" in problems[0]


def test_tool_query_is_parameterised(tmp_path):
    spec = spec_for(tmp_path)
    env = get_suite("maptab").build_env(spec)
    m = env.map_names[0]
    hostile = "x' OR '1'='1"
    assert station_neighbors(env.db_path, m, hostile) == []
    assert station_neighbors(env.db_path, m, "x'; DROP TABLE edges; --") == []
    con = duckdb.connect(env.db_path, read_only=True)
    station = con.execute("SELECT a FROM edges WHERE map = ? LIMIT 1", [m]).fetchone()[0]
    n_edges = con.execute("SELECT count(*) FROM edges").fetchone()[0]
    con.close()
    assert n_edges > 0
    assert station_neighbors(env.db_path, m, station)


def test_same_config_same_samples_byte_for_byte(tmp_path):
    a = spec_for(tmp_path / "a", "suite.categories=[map_only,T]", "suite.resolution=0.5")
    b = spec_for(tmp_path / "b", "suite.categories=[map_only,T]", "suite.resolution=0.5")
    suite = get_suite("maptab")
    sa = suite.build_samples(a, suite.build_env(a))
    sb = suite.build_samples(b, suite.build_env(b))
    dump = lambda samples: [(s.id, [m.model_dump_json(exclude={"id"}) for m in s.input], s.target) for s in samples]  # noqa: E731
    assert dump(sa) == dump(sb)
    c = spec_for(tmp_path / "c", "suite.categories=[map_only,T]", "suite.resolution=0.5", "seed=1")
    sc = suite.build_samples(c, suite.build_env(c))
    assert dump(sc) != dump(sa)


def test_two_suites_may_register_the_same_metric_name():
    @register_metric("shared_name_acc", suites=["suite_a"])
    def acc_a(inp):
        return 0.25

    @register_metric("shared_name_acc", suites=["suite_b"])
    def acc_b(inp):
        return 0.75

    a, _ = compute_metrics(
        ["shared_name_acc"], MetricInput(answer="", raw="", target=[], metadata={"suite": "suite_a"})
    )
    b, _ = compute_metrics(
        ["shared_name_acc"], MetricInput(answer="", raw="", target=[], metadata={"suite": "suite_b"})
    )
    assert (a["shared_name_acc"], b["shared_name_acc"]) == (0.25, 0.75)


def test_tokens_count_every_turn_of_the_evaluated_model(tmp_path):
    """A react agent with two model turns: the scorer sees both turns' tokens."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, Target, scorer
    from inspect_ai.solver import TaskState
    from inspect_ai.tool import tool

    from geoeval.core.scoring import evaluated_model_tokens

    @tool
    def noop():
        async def execute() -> str:
            """Do nothing."""
            return "ok"

        return execute

    outs = [
        ModelOutput.for_tool_call("mockllm/model", "noop", {}),
        ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "x"}),
    ]
    for o in outs:
        o.usage = ModelUsage(input_tokens=10, output_tokens=3, total_tokens=13)
    seen = {}

    @scorer(metrics=[])
    def probe():
        async def score(state: TaskState, target: Target) -> Score:
            seen.update(evaluated_model_tokens(state))
            return Score(value=1)

        return score

    model = get_model("mockllm/model", custom_outputs=outs, memoize=False)
    inspect_eval(
        Task(dataset=[Sample(input="go")], solver=react(tools=[noop()]), scorer=probe(), message_limit=10),
        model=model,
        display="none",
        log_dir=str(tmp_path),
    )
    assert seen == {"input": 20, "output": 6}
