"""The instance generator: restore -> identify -> filter, A.2 weights, the store filled from the
city, coverage, determinism."""

from __future__ import annotations

import json

import pytest

from geoeval.suites.mapsatisfy.generate.coverage_tables import coverage, print_coverage
from geoeval.suites.mapsatisfy.generate.generator import generate, write_generated
from geoeval.suites.mapsatisfy.generate.poi_city import distance_m, lifeplanner_available, monday_span, synthetic_city
from geoeval.suites.mapsatisfy.judging import weights as W
from geoeval.suites.mapsatisfy.schema import DOMAINS, IMPLICIT_FACTOR_SOURCES, load_instances
from geoeval.suites.mapsatisfy.suite import oracle_plan

N = 36


@pytest.fixture(scope="module")
def gen():
    return generate(N, seed=5)


def _response(gen, inst, tool):
    rec, *aliases = [r for r in gen.store.records(tool) if r.trace_id == inst.task_id]
    # search_poi is recorded under the city's code and its names too (cur_adcode takes either): one answer
    assert all(a.result == rec.result and a.arguments["cur_adcode"] in ("浙江省/杭州市", "杭州市") for a in aliases)
    assert len(aliases) == (2 if tool == "search_poi" else 0)
    return rec, json.loads(rec.result)


def test_same_seed_same_instances_and_store(gen):
    again = generate(N, seed=5)
    assert again.instances == gen.instances
    assert [(r.tool, r.key, r.result) for t in gen.store.tools for r in gen.store.records(t)] == [
        (r.tool, r.key, r.result) for t in again.store.tools for r in again.store.records(t)
    ]
    other = generate(N, seed=6)
    assert [i.query for i in other.instances] != [i.query for i in gen.instances]


def test_six_domains_in_turn_and_three_sources(gen):
    cov = coverage(gen.instances)
    assert cov["domain"] == {d: N // 6 for d in DOMAINS}
    assert set(cov["implicit_factor_source"]) == set(IMPLICIT_FACTOR_SOURCES)
    for inst in gen.instances:
        m = inst.metadata
        assert (
            m.time_slot and m.day_type in ("weekday", "weekend") and m.city_tier and m.difficulty in ("L1", "L2", "L3")
        )
        assert m.locality in ("local", "non_local") and m.sub_task
        assert m.implicit_factor_source == sorted({f.source for f in inst.ground_truth.implicit_intent})


def test_filter_keeps_pre_response_evidence_and_budgets_the_rest(gen):
    f = gen.funnel
    assert f["accepted"] == N and f["restored"] == f["accepted"] + f["rejected"]
    assert f["identified_factors"] == f["retained_factors"] + f["dropped_factors"]
    for inst in gen.instances:
        gt = inst.ground_truth
        assert gt.implicit_intent, inst.task_id  # at least one retained factor
        assert all(fac.source in IMPLICIT_FACTOR_SOURCES for fac in gt.implicit_intent)
        # the party size is shown only by the post-query visit: never a rubric, always a question
        assert not any("人安排" in fac.rubric_instruction for fac in gt.implicit_intent)
        assert gt.clarification_policy.max_allowed >= 1 and "个人" in gt.clarification_policy.evidence


def test_the_root_query_leaves_out_what_the_full_intent_says(gen):
    for inst in gen.instances:
        clauses = inst.full_intent.split("；")
        assert clauses[0] == inst.query and len(clauses) > 1
        assert not any(c in inst.query for c in clauses[1:])


def test_weights_follow_the_a2_model_from_the_recorded_behaviour(gen):
    checked = 0
    for inst in gen.instances:
        for fac in inst.ground_truth.implicit_intent:
            if fac.source == "context":
                assert fac.evidence_confidence in (1.0, 1.2)  # CurrentNeed only: direct / continued
                continue
            if fac.source == "spatio_temporal":
                assert fac.evidence_confidence == (1.0 if fac.constraint_type == "hard" else 0.6)
                continue
            # preference: recompute S * R * M (* CurrentNeed) from the behaviour summary the tool serves
            _, summary = _response(gen, inst, "search_user_action_summary")
            dim = "price_level" if "人均" in fac.rubric_instruction else "travel_mode"
            counts = {o: (v["前30天"], v["近30天"]) for o, v in summary["behaviour"][dim].items()}
            totals = {o: e + r for o, (e, r) in counts.items()}
            top = max(totals, key=lambda o: (totals[o], o))
            assert top in fac.evidence
            earlier, recent = counts[top]
            s = totals[top] / sum(totals.values())
            r = 0.8 if earlier >= recent else 1.0
            rate = (recent - earlier) / max(earlier, 1)
            m = 1.2 if rate >= 0.5 else 0.8 if rate <= -0.5 else 1.0
            need = 1.2 if (dim == "travel_mode" and top == "驾车" and inst.user_profile.attributes["has_car"]) else 1.0
            assert fac.evidence_confidence == round(s * r * m * need, 3), (inst.task_id, fac.rubric_instruction)
            assert W.evidence_weight(W.user_preference(s, r, m), need) == fac.evidence_confidence
            checked += 1
    assert checked >= 10


def test_every_expected_call_is_recorded_and_replays_exactly(gen):
    from geoeval.suites.mapsatisfy.metrics import _carried
    from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox

    sandbox = ReplaySandbox(gen.store, embedder=HashingEmbedder())
    for inst in gen.instances:
        plan = oracle_plan(inst, gen.store)
        assert [p["tool"] for p in plan] == inst.expected_tools
        for step in plan:
            assert all(_carried(step["arguments"].get(p)) for p in inst.required_parameters[step["tool"]])
            resp = sandbox.lookup(step["tool"], step["arguments"], trace_id=inst.task_id)
            assert resp.match_type == "exact" and json.loads(resp.content)["status"] == "ok", (inst.task_id, step)


def test_responses_are_computed_from_the_poi_table(gen):
    by_id = {p.poi_id: p for p in gen.city.pois}
    seen = set()
    for inst in gen.instances:
        for tool in inst.expected_tools:
            rec, body = _response(gen, inst, tool)
            a = rec.arguments
            if tool == "search_around_poi":
                pois = body["pois"]
                assert pois and all(by_id[p["poi_id"]].category == a["query"] for p in pois)
                dists = [p["distance_m"] for p in pois]
                assert dists == sorted(dists) and max(dists) <= a["range"]
                p0 = by_id[pois[0]["poi_id"]]
                assert dists[0] == distance_m(a["x"], a["y"], p0.lon, p0.lat)
            elif tool == "get_navigation":
                straight = distance_m(a["start_lon"], a["start_lat"], a["end_lon"], a["end_lat"])
                assert body["distance_m"] == int(straight * 1.3)
            elif tool == "get_taxi_route_plan":
                assert body["price_estimate_yuan"] >= 13
            seen.add(tool)
    assert {
        "search_around_poi",
        "get_navigation",
        "get_taxi_route_plan",
        "search_poi",
        "optimize_visit_order",
        "get_route_traffic_info",
        "restaurant_reservation",
        "search_user_action_summary",
    } <= seen


def test_distance_hand_computed():
    # one degree of latitude on a 6371 km sphere: 6371000 * pi / 180
    assert distance_m(120.0, 30.0, 120.0, 31.0) == 111195


def test_opening_span_of_a_lifeplanner_place():
    assert monday_span([]) == (8, 22)
    assert monday_span(list(range(24))) == (0, 24)
    assert monday_span([9, 10, 11]) == (9, 12)
    assert monday_span([0, 1, *range(8, 24)]) == (8, 24)  # 08:00-02:00: the small hours belong to last night


def test_coverage_is_printed_and_written(gen, tmp_path, capsys):
    path = tmp_path / "coverage.md"
    text = print_coverage(gen.instances, gen.funnel, path)
    assert path.read_text(encoding="utf-8") == text and text in capsys.readouterr().out
    assert "(Table B1)" in text and f"| search | {N // 6} | 16.7% |" in text
    assert f"| accepted | {N} |" in text


def test_written_files_load_back(gen, tmp_path):
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store

    bench, mock = write_generated(gen, tmp_path)
    assert load_instances(bench) == gen.instances
    assert len(load_mock_store(mock)) == len(gen.store)


def test_synthetic_city_is_seeded():
    assert synthetic_city(3).pois == synthetic_city(3).pois
    assert synthetic_city(3).pois != synthetic_city(4).pois


@pytest.mark.skipif(not lifeplanner_available(), reason="the LifePlanner suite is not present")
def test_a_lifeplanner_city_feeds_the_generator(tmp_path):
    from geoeval.suites.lifeplanner.city.environment import build_synthetic_city
    from geoeval.suites.mapsatisfy.generate.poi_city import city_from_lifeplanner

    db = tmp_path / "city.duckdb"
    build_synthetic_city(db, seed=1, n_places=80, n_notes=5, area_km2=2.0)
    city = city_from_lifeplanner(db)
    assert len(city.pois) == 80 and all(0 <= p.open_hour < p.close_hour <= 24 for p in city.pois)
    g = generate(12, seed=2, city=city)
    assert {i.metadata.domain[0] for i in g.instances} == set(DOMAINS)
    ids = {p.poi_id for p in city.pois}
    _, body = next((r, json.loads(r.result)) for r in g.store.records("search_around_poi"))
    assert {p["poi_id"] for p in body["pois"]} <= ids


def test_generator_weights_hand_computed():
    from datetime import datetime

    from geoeval.suites.mapsatisfy.generate.behaviour_chain import Candidate, Factor, _weight
    from geoeval.suites.mapsatisfy.generate.poi_city import POI
    from geoeval.suites.mapsatisfy.user.model import UserModel

    user = UserModel(
        uid="u",
        home_city="x",
        has_car=True,
        behaviour={
            "price_level": {"实惠": (6, 6), "中等": (2, 1), "高端": (1, 0)},  # S 12/16, routine (6 >= 6), M 1.0
            "rating": {"高评分": (1, 1), "不限": (0, 0)},
            "travel_mode": {"驾车": (3, 9), "地铁": (2, 2), "打车": (0, 0)},  # S 12/16, recent, rate +2.0 -> M 1.2
        },
    )
    poi = POI("p", "p", "c", 4.0, 50, 8, 22, 120.0, 30.0, "d")
    cand = Candidate(
        domain="navigation",
        sub_task="s",
        user=user,
        when=datetime(2026, 6, 1, 12),
        origin=poi,
        target=poi,
        second=None,
        history=[],
        query="q",
        explicit=[],
        factors=[],
        locality="local",
        party=2,
    )

    def w(key, source, hard=False):
        return _weight(cand, Factor(key, source, hard, "r", "e", "i"))

    assert w("price", "preference") == 0.6  # 0.75 * 0.8 * 1.0
    assert w("mode", "preference") == 1.08  # 0.75 * 1.0 * 1.2, times CurrentNeed 1.2 (driving, has a car)
    assert w("kids", "context") == 1.0 and w("parking", "context") == 1.2
    assert w("open", "spatio_temporal", hard=True) == 1.0 and w("near", "spatio_temporal") == 0.6


def _spec(tmp_path, **env):
    from types import SimpleNamespace

    from geoeval.suites.mapsatisfy.config import MapSatisfyGeneratedEnvConfig, MapSatisfySuiteConfig

    return SimpleNamespace(
        env=MapSatisfyGeneratedEnvConfig(out_dir=str(tmp_path), embedder="hashing", **env),
        suite=MapSatisfySuiteConfig(),
    )


def test_generated_env_is_deterministic_so_runs_resume(tmp_path):
    from geoeval.suites.mapsatisfy.suite import MapSatisfySuite

    first = MapSatisfySuite().build_env(_spec(tmp_path, n=6, seed=2))
    again = MapSatisfySuite().build_env(_spec(tmp_path, n=6, seed=2))
    other = MapSatisfySuite().build_env(_spec(tmp_path, n=6, seed=3))
    assert first.fingerprint == again.fingerprint != other.fingerprint
    assert len(load_instances(first.bench_path)) == 6


def test_lifeplanner_city_without_a_database_is_a_config_error(tmp_path):
    from geoeval.core.errors import GeoevalError
    from geoeval.suites.mapsatisfy.suite import MapSatisfySuite

    with pytest.raises(GeoevalError, match="env.lifeplanner_db"):
        MapSatisfySuite().build_env(_spec(tmp_path, city="lifeplanner", lifeplanner_db=str(tmp_path / "none.duckdb")))
