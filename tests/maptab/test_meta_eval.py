"""MapTab meta-evaluation (issue 11 item 1): answers of known quality, scored through the suite's
real scorer path, must be ordered by every metric (targets 1.0: all MapTab metrics are
deterministic), and a broken metric must be caught."""

from __future__ import annotations

import itertools

import pytest

from geoeval.core.analysis.answer_families import READING_FAMILIES
from geoeval.core.analysis.meta_eval import ordering_report
from geoeval.core.registry import get_suite
from geoeval.suites.maptab import wrong_answers
from geoeval.suites.maptab.metrics import split_route
from geoeval.suites.maptab.routing.transfers import TRANSFER_MARK, parse_route
from tests.conftest import compose_spec

ALL_CATEGORIES = "suite.categories=[map_only,edge_only,map_edge,T,P,C,R,TPR,TCR,PCR,TPCR,mix]"


def _run(tmp_path, *overrides):
    spec = compose_spec(tmp_path, *overrides)
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)
    return suite, spec, env, samples, suite.meta_eval_answers(spec, env, samples)


@pytest.fixture(scope="module")
def rp_run(tmp_path_factory):
    return _run(
        tmp_path_factory.mktemp("rp"),
        "suite=maptab",
        "suite.scenario=both",
        "env.n_maps=1",
        "suite.n_per_category=2",
        ALL_CATEGORIES,
    )


def _by_sample(answers):
    out: dict[str, dict[str, object]] = {}
    for a in answers:
        out.setdefault(a.sample_id, {})[a.tier.name] = a
    return out


def test_every_metric_orders_every_known_pair(rp_run):
    suite, _spec, _env, samples, answers = rp_run
    report = ordering_report(answers, suite.meta_eval_targets)
    assert set(report) == {"ema", "pma", "ds"}  # token counts judge no answer: left out
    for metric, row in report.items():
        assert row["met"] and row["accuracy"] == 1.0, (metric, row["examples"])
    tiers = {a.tier.name for a in answers if a.tier.family == "tiers"}
    assert tiers == {
        "reference",
        "defect:wrong_station",
        "defect:missing_station",
        "defect:wrong_transfer",
        "defect:longer_route",
        "defect:wrong_answer_alone",  # the reading families' worst candidate
        "empty",
        "refusal",
        "invented",
    }
    # every sample has the reference and the worthless answers; defects where they can be built
    per = _by_sample(answers)
    assert set(per) == {s.id for s in samples}
    assert all({"reference", "empty", "refusal", "invented", "defect:missing_station"} <= set(t) for t in per.values())


def test_the_reference_scores_full_marks_and_worthless_answers_nothing(rp_run):
    _suite, _spec, _env, _samples, answers = rp_run
    for a in answers:
        if a.tier.name == "reference":
            assert a.scores["ema"] == 1.0 and a.scores["pma"] == 1.0 and a.scores["ds"] >= 2
        if a.tier.level == 2:
            assert a.scores == {"ema": 0.0, "pma": 0.0, "ds": 0.0}, (a.tier.name, a.answer)


def test_defects_are_what_their_names_say(rp_run):
    """Structure of each defect against its sample's references and map."""
    from geoeval.suites.maptab.env.environment import load_maps
    from geoeval.suites.maptab.generator.difficulty import to_graph

    _suite, _spec, env, samples, answers = rp_run
    maps = {m.name: m for m in load_maps(env.db_path)}
    per = _by_sample(answers)
    for s in samples:
        tiers = per[s.id]
        refs = list(s.target)
        ref = split_route(refs[0])
        ref_paths = [parse_route(r)[0] for r in refs]
        m = maps[s.metadata["map"]]
        wrong = split_route(tiers["defect:wrong_station"].answer)
        assert len(wrong) == len(ref) and sum(a != b for a, b in zip(wrong, ref)) == 1
        assert not {parse_route(x)[0][0] for x in wrong} - set(m.stations)  # real stations only
        assert len(split_route(tiers["defect:missing_station"].answer)) == len(ref) - 1
        if s.metadata["scenario"] == "metromap":
            toggled = split_route(tiers["defect:wrong_transfer"].answer)
            assert [p.replace(TRANSFER_MARK, "") for p in toggled] == [p.replace(TRANSFER_MARK, "") for p in ref]
            assert toggled != ref
        else:
            assert "defect:wrong_transfer" not in tiers
        if "defect:longer_route" in tiers:
            path = parse_route(tiers["defect:longer_route"].answer)[0]
            g = to_graph(m)
            assert len(path) > len(ref) and path not in ref_paths and len(set(path)) == len(path)
            assert (path[0], path[-1]) == (ref_paths[0][0], ref_paths[0][-1])
            assert all(g.has_edge(a, b) for a, b in itertools.pairwise(path))  # a valid route of the map
        invented = split_route(tiers["invented"].answer.splitlines()[1])
        assert not set(invented) & set(m.stations)


def _with_protocol(spec, protocol):
    return spec.model_copy(update={"scoring": spec.scoring.model_copy(update={"protocol": protocol})})


@pytest.mark.parametrize("protocol", ["robust", "paper"])
def test_a_broken_metric_is_caught(rp_run, monkeypatch, protocol):
    """An EMA that forgot the paper's transfer rule ties the reference with a wrong transfer mark:
    the ordering report shows it (the meta-eval can fail), under either protocol."""
    from geoeval.suites.maptab import scorers

    suite, spec, env, samples, _answers = rp_run
    if protocol == "paper":
        real = scorers.m.ema
        monkeypatch.setattr(
            scorers.m, "ema", lambda r, refs, scen="metromap", **k: real(r, refs, scen, transfer_rule=False)
        )
    else:
        real_robust = scorers.match.ema
        monkeypatch.setattr(
            scorers.match, "ema", lambda a, refs, meta: real_robust(a, refs, {**meta, "scenario": "travelmap"})
        )
    spec = _with_protocol(spec, protocol)
    report = ordering_report(suite.meta_eval_answers(spec, env, samples), suite.meta_eval_targets)
    assert not report["ema"]["met"]
    assert (
        report["ema"]["by_worse_tier"]["defect:wrong_transfer"]["correct"]
        < report["ema"]["by_worse_tier"]["defect:wrong_transfer"]["pairs"]
    )
    # PMA does not apply the transfer rule: its defect pairs are untouched by the broken EMA
    assert all(
        report["pma"]["by_worse_tier"][t]["correct"] == report["pma"]["by_worse_tier"][t]["pairs"]
        for t in ("defect:wrong_station", "defect:missing_station")
    )


def test_authors_items_and_qa(tmp_path, peers):
    suite, _spec, _env, samples, answers = _run(
        tmp_path, "suite=maptab", "env=maptab_authors", f"env.root={peers}/maptab"
    )
    report = ordering_report(answers, suite.meta_eval_targets)
    assert all(row["met"] for row in report.values()), report
    assert len({a.sample_id for a in answers}) == len(samples) == 24
    suite, _spec, _env, samples, answers = _run(tmp_path, "suite=maptab_qa", "metrics=maptab_qa", "env.n_maps=1")
    report = ordering_report(answers, suite.meta_eval_targets)
    assert set(report) == {"acc"} and report["acc"]["met"] and report["acc"]["accuracy"] == 1.0
    assert report["acc"]["by_worse_tier"]["defect:wrong_value"]["pairs"] == len(samples)
    # a name where a number or 1/0 is asked scores 0 (not a harness error)
    assert all(a.scores["acc"] == 0.0 for a in answers if a.tier.name == "invented")


def test_wrong_value_is_wrong_for_each_kind():
    assert wrong_answers.wrong_value("1", "binary") == "0" and wrong_answers.wrong_value("0", "binary") == "1"
    assert wrong_answers.wrong_value("7", "integer") == "8"
    assert wrong_answers.wrong_value("0.42", "number") == "1.42"


FAMILIES = {"tiers", "surface", "gaming", "partial", "trajectory", *READING_FAMILIES}


def test_answer_families_are_ordered_under_the_robust_protocol(rp_run):
    suite, _spec, _env, _samples, answers = rp_run
    assert {a.tier.family for a in answers} == FAMILIES
    report = ordering_report(answers, suite.meta_eval_targets)
    for metric, row in report.items():
        assert set(row["by_family"]) == FAMILIES
        for family, f in row["by_family"].items():
            assert f["met"] and f["accuracy"] == 1.0, (metric, family, row["examples"])
    # every surface form scores exactly the reference; a negated reference scores nothing
    per = _by_sample(answers)
    for tiers in per.values():
        for name, a in tiers.items():
            if name.startswith(("surface:", "trajectory:no_tools", "trajectory:submitted")):
                assert a.scores == tiers["reference"].scores, (name, a.answer)
        assert tiers["gaming:negated"].scores == {"ema": 0.0, "pma": 0.0, "ds": 0.0}


def test_the_paper_protocol_misreads_surface_forms_and_gaming(rp_run):
    """The families measure what the paper's reading gets wrong (issue 22's table): the
    meta-evaluation fails it there, and keeps its tiers ordered."""
    suite, spec, env, samples, _answers = rp_run
    answers = suite.meta_eval_answers(_with_protocol(spec, "paper"), env, samples)
    tiers_only = ordering_report([a for a in answers if a.tier.family == "tiers"], suite.meta_eval_targets)
    assert all(row["accuracy"] == 1.0 for row in tiers_only.values())
    report = ordering_report(answers, suite.meta_eval_targets)
    for metric in ("ema", "pma", "ds"):
        assert report[metric]["by_family"]["surface"]["accuracy"] < 0.95
        assert report[metric]["by_family"]["gaming"]["accuracy"] < 0.95
        assert not report[metric]["met"]
