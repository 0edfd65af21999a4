"""Behaviour-chain candidates and the first steps of the generator (3.1): **restore** a simulated
chain x = (q, g, h-, r, h+) and the full need behind it (`_restore`), **identify** the factors the
root query does not state (`_identify`) and **filter** them by pre-response evidence, weighted by
the A.2 model (`_filter`, `_weight`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from geoeval.suites.mapsatisfy.generate.poi_city import POI, SEARCH_PAGE, City, distance_m
from geoeval.suites.mapsatisfy.judging import weights as W
from geoeval.suites.mapsatisfy.schema import IMPLICIT_FACTOR_SOURCES
from geoeval.suites.mapsatisfy.user.model import PRICE_CAP, UserModel


@dataclass
class Factor:
    """A candidate decision factor of the restored need."""

    key: str
    source: str  # context | preference | spatio_temporal | post_query (only h+ supports it)
    hard: bool
    rubric: str
    evidence: str
    intent: str  # the clause of the full intent that states it
    weight: float | None = None


@dataclass
class Candidate:
    domain: str
    sub_task: str
    user: UserModel
    when: datetime
    origin: POI  # where the user is (g)
    target: POI  # where the user went afterwards (h+)
    second: POI | None  # itinerary: a second stop
    history: list[str]
    query: str
    explicit: list[str]
    factors: list[Factor]
    locality: str
    party: int


_SUB_TASKS = {
    "search": "nearby_search",
    "navigation": "route_planning",
    "ride_hailing": "taxi_estimate",
    "itinerary": "multi_stop_plan",
    "real_time_info": "traffic_check",
    "local_services": "table_reservation",
}


def time_slot(hour: int) -> str:
    if 5 <= hour < 8:
        return "early_morning"
    if 8 <= hour < 11:
        return "morning"
    if 11 <= hour < 13:
        return "noon"
    if 13 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 19:
        return "evening"
    if 19 <= hour < 23:
        return "night"
    return "late_night"


def _restore(rng: np.random.Generator, city: City, user: UserModel, domain: str, day0: datetime) -> Candidate:
    """Simulate one behaviour chain and restore the full need behind it."""
    when = day0 + timedelta(
        days=int(rng.integers(0, 14)),
        hours=int(rng.choice([8, 10, 12, 15, 18, 20, 22])),
        minutes=int(rng.integers(0, 60)),
    )
    dining = city.dining_categories() or city.categories
    category = str(rng.choice(dining if domain in ("search", "local_services") else city.categories))
    hour = when.hour
    places = city.by_category(category)
    origin = city.pois[int(rng.integers(len(city.pois)))]
    cap = PRICE_CAP[user.top("price_level")]

    def fits(p: POI) -> bool:
        return p.open_at(hour) and (p.avg_price == 0 or p.avg_price <= cap)

    # the anchor h+: the nearest fitting place (the user's later visit), else the nearest one
    ranked = sorted(places, key=lambda p: (distance_m(origin.lon, origin.lat, p.lon, p.lat), p.poi_id))
    target = next((p for p in ranked if fits(p) and p.poi_id != origin.poi_id), ranked[0])
    second = None
    if domain == "itinerary":
        others = [p for p in city.pois if p.category != category and p.open_at(hour)]
        second = min(
            others or list(city.pois), key=lambda p: (distance_m(target.lon, target.lat, p.lon, p.lat), p.poi_id)
        )
    locality = "local" if user.home_city == city.name else "non_local"
    party = int(rng.integers(1, 5))
    earlier = (when - timedelta(hours=2)).strftime("%H:%M")

    history = [f"{(when - timedelta(hours=5)).strftime('%H:%M')} 打开地图查看了{origin.district}附近"]
    factors: list[Factor] = []
    mode = user.top("travel_mode")
    # preference: price level (S, R, M from the two windows)
    level = user.top("price_level")
    # only when the anchor keeps to it (a chain whose later visit broke the price level shows no such
    # preference) and, for a nearby search, when the search the case expects can find it
    searched = domain in ("search", "local_services")
    if (
        domain in ("search", "local_services", "itinerary")
        and 0 < target.avg_price <= cap
        and (not searched or _on_first_page(origin, target, places))
    ):
        factors.append(
            Factor(
                "price",
                "preference",
                False,
                f"推荐人均不超过{cap}元的地点",
                f"用户画像与历史行为：消费偏好{level}",
                f"人均最好别超过{cap}元",
            )
        )
    if domain in ("navigation", "itinerary", "ride_hailing"):
        factors.append(
            Factor(
                "mode",
                "preference",
                domain == "navigation",
                f"按用户的{mode}出行习惯规划",
                f"用户画像与历史行为：出行习惯{mode}",
                f"我一般{mode}出行",
            )
        )
    # context: an earlier same-day event that carries into this task
    with_kids = bool(rng.random() < 0.5)
    if with_kids:
        history.append(f"{earlier} 搜索了“儿童乐园”")
        factors.append(
            Factor(
                "kids",
                "context",
                False,
                "考虑带孩子同行，推荐适合亲子的地点或路线",
                "当天早些时候搜索过儿童乐园，本次出行带孩子",
                "今天带孩子一起",
            )
        )
    if user.has_car and domain in ("search", "local_services", "itinerary"):
        history.append(f"{earlier} 驾车导航到{origin.name}")
        factors.append(
            Factor(
                "parking",
                "context",
                False,
                "提示目的地附近的停车条件",
                "当天驾车导航到当前位置，仍在驾车状态",
                "我开车过去，要方便停车",
            )
        )
    # spatio-temporal: the clock and the place
    # the place the user went to was open then and closes soon: it must still be open (a closed anchor shows nothing)
    if target.open_at(hour) and target.close_hour < 24 and target.close_hour - hour <= 3:
        factors.append(
            Factor(
                "open",
                "spatio_temporal",
                True,
                f"推荐的地点在{hour:02d}:{when.minute:02d}之后仍营业",
                f"当前时间{when.strftime('%H:%M')}，临近多数门店打烊",
                "要现在还开着的",
            )
        )
    # nearness matters for choosing among places, less for a named destination; not every chain has it
    if domain in ("search", "local_services", "itinerary") and rng.random() < 0.5:
        factors.append(
            Factor(
                "near",
                "spatio_temporal",
                False,
                "优先考虑离当前位置近的选项",
                f"用户当前位于{origin.name}",
                "离我近一点",
            )
        )
    # only the post-query behaviour shows it: dropped by the filter, a clarification may ask it
    factors.append(Factor("party", "post_query", False, f"按{party}人安排", f"事后到店{party}人", f"一共{party}个人"))
    query, explicit = _query_and_explicit(domain, category, target, second)
    return Candidate(
        domain=domain,
        sub_task=_SUB_TASKS[domain],
        user=user,
        when=when,
        origin=origin,
        target=target,
        second=second,
        history=history,
        query=query,
        explicit=explicit,
        factors=factors,
        locality=locality,
        party=party,
    )


def _on_first_page(origin: POI, target: POI, places: list[POI], range_m: int = 5000) -> bool:
    """Whether a nearby search from `origin` over `places` (the expected call: range 5 km, one page
    of SEARCH_PAGE nearest) returns `target`."""
    near = sorted((distance_m(origin.lon, origin.lat, p.lon, p.lat), p.poi_id) for p in places)
    page = [pid for d, pid in near if d <= range_m][:SEARCH_PAGE]
    return target.poi_id in page


def _query_and_explicit(domain: str, category: str, target: POI, second: POI | None) -> tuple[str, list[str]]:
    if domain == "search":
        return f"附近有什么{category}", [f"推荐附近的{category}"]
    if domain == "navigation":
        return f"去{target.name}", [f"规划从当前位置到{target.name}的路线"]
    if domain == "ride_hailing":
        return f"打车去{target.name}", [f"给出到{target.name}的打车方案和预估价格"]
    if domain == "itinerary":
        assert second is not None
        return f"想去{target.name}，再去{second.name}", [f"安排{target.name}和{second.name}的游览顺序"]
    if domain == "real_time_info":
        return f"{target.name}那边现在堵吗", [f"告知{target.name}周边的实时路况"]
    return f"帮我订个{category}", [f"预订一家{category}"]


# ---------------------------------------------------------------------------------------------
# identify and filter


def _identify(c: Candidate) -> list[Factor]:
    """Z(x): the restored factors the root query does not state."""
    return [f for f in c.factors if f.intent not in c.query and f.rubric not in c.query]


def _weight(c: Candidate, f: Factor) -> float:
    """w_i by the A.2 model from the evidence the factor has."""
    if f.source == "preference":
        dim = "price_level" if f.key == "price" else "travel_mode"
        option = c.user.top(dim)
        earlier, recent = c.user.behaviour[dim][option]
        tot = c.user.totals(dim)
        s = W.behaviour_strength(tot[option], sum(tot.values()))
        routine = earlier >= recent  # support that was already there before the recent window is a habit
        m = W.momentum(W.window_change_rate(recent, earlier))
        pref = W.user_preference(s, W.recency(routine), m)
        # an earlier drive today continues the driving habit: both sides support the factor
        need = W.current_need("continued") if (f.key == "mode" and option == "驾车" and c.user.has_car) else None
        return W.evidence_weight(pref, need)
    if f.source == "context":
        return W.evidence_weight(None, W.current_need("continued" if f.key == "parking" else "direct"))
    # spatio-temporal: a hard opening-time constraint is direct; nearness is weak evidence
    return W.evidence_weight(None, W.current_need("direct" if f.hard else "weak"))


def _filter(c: Candidate, identified: list[Factor]) -> tuple[list[Factor], list[Factor]]:
    """Keep the factors that pre-response evidence supports (profile, h-, g), weighted; the rest
    (supported only by h+) are returned separately."""
    kept: list[Factor] = []
    dropped: list[Factor] = []
    for f in identified:
        if f.source in IMPLICIT_FACTOR_SOURCES:
            f.weight = _weight(c, f)
            (kept if f.weight > 0 else dropped).append(f)
        else:
            dropped.append(f)
    return kept, dropped
