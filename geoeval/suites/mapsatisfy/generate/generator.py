"""Instance generator: MapSatisfy instances over a city, following restore -> identify -> filter (3.1).

The paper mines anonymised map-service logs; geoeval has no logs, so it simulates the behaviour chain
x = (q, g, h-, r, h+) and then applies the same three steps to it:

1. **restore** (`_restore`): a user (profile with behaviour statistics), a moment and a place (g), a
   same-day history before the query (h-), and the place the user went to afterwards (h+, the
   behavioural anchor). The full need behind the query is restored from all of it: the explicit
   task plus candidate decision factors, each with where its evidence lies (profile, history, the
   spatio-temporal environment, or only the post-query behaviour).
2. **identify** (`_identify`): the root query names the task and the place category only; every
   factor the query does not state is a candidate implicit factor Z(x).
3. **filter** (`_filter`): a factor is kept only when pre-response evidence supports it (profile,
   h-, g); factors supported only by h+ (what the user did after the answer) are dropped from the
   rubric and become what a clarification may ask (the budget). A candidate with no retained factor
   is rejected, as in the paper; `Generated.funnel` counts each step.

Retained factors get their weight from the A.2 model (`judging/weights.py`): preference factors from the
behaviour statistics (S = n/N, R routine 0.8 / recent 1.0, M from the recent and earlier windows),
context factors from the same-day history (CurrentNeed), spatio-temporal factors from g.

The city is a POI table (`City`): seeded synthetic POIs (`synthetic_city`) or, when the LifePlanner
suite is present, its DuckDB `places` table (`city_from_lifeplanner`). Every expected tool call of
every instance is answered from that table (`_respond`) and recorded in a `RecordStore` under the
instance's task id, so the replay sandbox serves the oracle's calls exactly. Everything is a
function of the seed.

This module assembles instances (`generate`, `write_generated`); the steps live beside it, except
the users: the city in `poi_city.py`, users in `user/model.py`, restore, identify and filter in
`behaviour_chain.py`, the expected calls and their responses in `expected_calls.py`, coverage
tables in `coverage_tables.py`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from geoeval.suites.mapsatisfy.generate.behaviour_chain import (
    Candidate,
    Factor,
    _filter,
    _identify,
    _restore,
    time_slot,
)
from geoeval.suites.mapsatisfy.generate.coverage_tables import (
    coverage_markdown,
)
from geoeval.suites.mapsatisfy.generate.expected_calls import (
    _CASE_REQUIRED,
    _PARAM_RULES,
    _calls,
    _respond,
)
from geoeval.suites.mapsatisfy.generate.poi_city import (
    City,
    synthetic_city,
)
from geoeval.suites.mapsatisfy.replay.catalogue import TOOL_SPECS
from geoeval.suites.mapsatisfy.schema import DOMAINS, MapSatisfyInstance, parse_instance
from geoeval.suites.mapsatisfy.user.model import (
    generate_user,
)

# ---------------------------------------------------------------------------------------------
# assembling instances


@dataclass
class Generated:
    instances: list[MapSatisfyInstance]
    store: Any  # RecordStore
    city: City
    funnel: Counter = field(default_factory=Counter)


def difficulty_of(factors: list[Factor]) -> str:
    """L1: one source; L2: two sources; L3: three sources, or a hard constraint among two or more."""
    sources = {f.source for f in factors}
    if len(sources) >= 3 or (len(sources) == 2 and any(f.hard for f in factors)):
        return "L3"
    return "L2" if len(sources) == 2 else "L1"


def _instance(
    c: Candidate, city: City, kept: list[Factor], dropped: list[Factor], index: int, seed: int
) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any], dict[str, Any]]]]:

    task_id = hashlib.sha1(f"mapsatisfy-gen:{seed}:{index}".encode()).hexdigest()[:32]
    needs_profile = any(f.source == "preference" for f in kept)
    calls = _calls(c, city, needs_profile)
    recorded = [(tool, args, _respond(tool, args, c, city)) for tool, args in calls]
    tools = list(dict.fromkeys(t for t, _ in calls))
    rules = {}
    for tool in tools:
        required = list(dict.fromkeys([*TOOL_SPECS[tool].required, *_CASE_REQUIRED.get(tool, [])]))
        rules[tool] = {
            "paramter": required,
            "rules": [{"param": p, "rule_description": d} for p, d in _PARAM_RULES.get(tool, {}).items()],
        }
    rubric = ["回答中的地点名称、距离、时间、价格等事实须与工具返回一致"]
    if c.domain in ("search", "local_services"):
        rubric.append("推荐的门店须来自周边搜索结果")
    if c.domain in ("navigation", "ride_hailing", "itinerary"):
        rubric.append("路线距离与用时须来自路线规划结果")
    intent = "；".join([c.query] + [f.intent for f in c.factors])
    record = {
        "task_id": task_id,
        "query": c.query,
        "full_intent": intent,
        "context": {
            "uid": c.user.uid,
            "time": c.when.strftime("%Y-%m-%d %H:%M:%S"),
            "user_current_loc": c.origin.location,
            "user_loc_name": c.origin.name,
            "city": city.name,
            "history": c.history,
        },
        "user_profile": c.user.profile(c.locality),
        "ground_truth": {
            "explicit_intent": c.explicit,
            "implicit_intent": [
                {
                    "rubric_instruction": f.rubric,
                    "constraint_type": "hard" if f.hard else "soft",
                    "evidence_confidence": f.weight,
                    "evidence": f.evidence,
                    "source": f.source,
                }
                for f in kept
            ],
            # what only the post-query behaviour shows cannot be inferred: the agent may ask it
            "clarification_policy": {
                "max_allowed": max(1, len(dropped)),
                "evidence": "；".join(f.intent for f in dropped) or "无需澄清",
            },
            "truth_trajectory": {
                "tool_calls": {"expected_tools": tools, "parameter_rules": rules, "factual_answer_rubric": rubric}
            },
        },
        "metadata": {
            "domain": [c.domain],
            "sub_task": [c.sub_task],
            "implicit_factor_source": sorted({f.source for f in kept}),
            "time_slot": time_slot(c.when.hour),
            "day_type": "weekend" if c.when.weekday() >= 5 else "weekday",
            "city_tier": city.tier,
            "locality": c.locality,
            "difficulty": difficulty_of(kept),
        },
    }
    return record, recorded


def generate(
    n: int, seed: int = 0, city: City | None = None, n_users: int = 40, day0: datetime = datetime(2026, 6, 1)
) -> Generated:
    """`n` instances over `city` (default: `synthetic_city(seed)`), the six domains in turn, and a
    store holding every expected call of every instance (trace id = task id)."""
    from geoeval.suites.mapsatisfy.replay.store import RecordStore

    city = city or synthetic_city(seed)
    rng = np.random.default_rng(seed + 7919)
    users = [generate_user(rng, i, city, seed) for i in range(n_users)]
    store = RecordStore()
    instances: list[MapSatisfyInstance] = []
    funnel: Counter = Counter()
    attempt = 0
    while len(instances) < n:
        if attempt > 20 * n + 100:
            raise RuntimeError(f"only {len(instances)} of {n} candidates passed the filter")
        domain = DOMAINS[len(instances) % len(DOMAINS)]  # a rejected chain is restored again in its domain
        attempt += 1
        cand = _restore(rng, city, users[int(rng.integers(n_users))], domain, day0)
        funnel["restored"] += 1
        identified = _identify(cand)
        funnel["identified_factors"] += len(identified)
        kept, dropped = _filter(cand, identified)
        funnel["retained_factors"] += len(kept)
        funnel["dropped_factors"] += len(dropped)
        # a chain is kept only when its anchor meets the explicit task (3.1): a booking needs an open place
        bookable = cand.domain != "local_services" or cand.target.open_at(cand.when.hour)
        if not kept or not bookable:
            funnel["rejected"] += 1
            continue
        record, recorded = _instance(cand, city, kept, dropped, len(instances), seed)
        for tool, args, response in recorded:
            # search_poi's cur_adcode takes the city's name as well as its code (the catalogue):
            # the store answers each, as the service would (the context gives the agent the name,
            # "浙江省/杭州市", whose city is 杭州市)
            names = dict.fromkeys([city.name, city.name.split("/")[-1]])
            forms = [args]
            if args.get("cur_adcode") == city.adcode:
                forms += [{**args, "cur_adcode": name} for name in names]
            for form in forms:
                store.add(
                    tool,
                    form,
                    json.dumps(response, ensure_ascii=False),
                    trace_id=record["task_id"],
                    source=f"generated:{seed}",
                )
        instances.append(parse_instance(record))
        funnel["accepted"] += 1
    return Generated(instances=instances, store=store, city=city, funnel=funnel)


def write_generated(gen: Generated, directory: str | Path) -> tuple[Path, Path]:
    """`instances.jsonl`, `mock_data/<tool>.csv` (the authors' layout) and `coverage.md`."""
    from geoeval.suites.mapsatisfy.schema import save_instances

    directory = Path(directory)
    bench = save_instances(gen.instances, directory / "instances.jsonl")
    mock = directory / "mock_data"
    mock.mkdir(parents=True, exist_ok=True)
    gen.store.save_csv(mock)
    (directory / "coverage.md").write_text(coverage_markdown(gen.instances, gen.funnel), encoding="utf-8")
    return bench, mock
