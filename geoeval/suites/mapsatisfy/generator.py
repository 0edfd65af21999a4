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

Retained factors get their weight from the A.2 model (`weights.py`): preference factors from the
behaviour statistics (S = n/N, R routine 0.8 / recent 1.0, M from the recent and earlier windows),
context factors from the same-day history (CurrentNeed), spatio-temporal factors from g.

The city is a POI table (`City`): seeded synthetic POIs (`synthetic_city`) or, when the LifePlanner
suite is present, its DuckDB `places` table (`city_from_lifeplanner`). Every expected tool call of
every instance is answered from that table (`_respond`) and recorded in a `RecordStore` under the
instance's task id, so the replay sandbox serves the oracle's calls exactly. Everything is a
function of the seed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from geoeval.suites.mapsatisfy import weights as W
from geoeval.suites.mapsatisfy.schema import DOMAINS, IMPLICIT_FACTOR_SOURCES, MapSatisfyInstance, parse_instance

# ---------------------------------------------------------------------------------------------
# The city


@dataclass(frozen=True)
class POI:
    poi_id: str
    name: str
    category: str
    rating: float
    avg_price: int  # CNY per person; 0 where there is no price
    open_hour: int  # opening hours [open_hour, close_hour) in whole hours; 0-24 is round the clock
    close_hour: int
    lon: float
    lat: float
    district: str

    def open_at(self, hour: int) -> bool:
        return self.open_hour <= hour < self.close_hour

    @property
    def hours_text(self) -> str:
        return f"{self.open_hour:02d}:00-{self.close_hour:02d}:00"

    @property
    def location(self) -> str:
        return f"{self.lon:.6f},{self.lat:.6f}"


@dataclass(frozen=True)
class City:
    name: str  # "province/city"
    adcode: str
    tier: str
    center: tuple[float, float]
    pois: tuple[POI, ...]
    districts: tuple[str, ...]

    @property
    def short_name(self) -> str:
        return self.name.split("/")[-1]

    def by_category(self, category: str) -> list[POI]:
        return [p for p in self.pois if p.category == category]

    @property
    def categories(self) -> list[str]:
        return sorted({p.category for p in self.pois})

    def dining_categories(self) -> list[str]:
        """Categories with a price per person: the ones a table can be booked at."""
        return [c for c in self.categories if any(p.avg_price > 0 for p in self.by_category(c))]


# (category, price range per person or None, opening hours, brands)
_SYNTHETIC_CATEGORIES: tuple[tuple[str, tuple[int, int] | None, tuple[int, int], tuple[str, ...]], ...] = (
    ("火锅店", (70, 160), (11, 24), ("蜀香", "老码头", "川味居")),
    ("咖啡馆", (25, 50), (8, 22), ("漫时光", "豆子", "街角")),
    ("川菜馆", (45, 120), (10, 22), ("巴蜀人家", "辣府", "蓉城")),
    ("亲子餐厅", (60, 140), (10, 21), ("小象", "童趣", "彩虹")),
    ("烧烤店", (50, 110), (17, 24), ("炭火", "夜猫子", "串香")),
    ("商场", None, (10, 22), ("万象", "银泰", "天街")),
    ("公园", None, (6, 22), ("湖滨", "西溪", "运河")),
    ("博物馆", None, (9, 17), ("城市", "丝绸", "自然")),
    ("加油站", None, (0, 24), ("中石化", "中石油", "壳牌")),
    ("充电站", None, (0, 24), ("特来电", "星星充电", "国家电网")),
    ("电影院", (40, 90), (9, 24), ("万达影城", "星光影院", "大地影院")),
    ("健身房", (30, 80), (6, 23), ("乐刻", "超级猩猩", "力美")),
)
_DISTRICTS = ("西湖区", "上城区", "拱墅区", "滨江区", "余杭区", "萧山区")


def synthetic_city(seed: int = 0, n_pois: int = 360, name: str = "浙江省/杭州市", adcode: str = "330100",
                   tier: str = "new_first_tier", center: tuple[float, float] = (120.155, 30.274)) -> City:
    """A seeded POI table: categories in turn, coordinates within about 8 km of `center`,
    ratings 3.2-4.9, prices and hours per category."""
    rng = np.random.default_rng(seed)
    pois = []
    for i in range(n_pois):
        category, price, hours, brands = _SYNTHETIC_CATEGORIES[i % len(_SYNTHETIC_CATEGORIES)]
        district = _DISTRICTS[int(rng.integers(len(_DISTRICTS)))]
        brand = brands[int(rng.integers(len(brands)))]
        lon = center[0] + float(rng.uniform(-0.08, 0.08))
        lat = center[1] + float(rng.uniform(-0.07, 0.07))
        pois.append(POI(
            poi_id=f"B0{seed % 1000:03d}{i:05d}", name=f"{brand}{category}({district[:2]}{i}店)", category=category,
            rating=round(float(np.clip(rng.normal(4.2, 0.4), 3.2, 4.9)), 1),
            avg_price=0 if price is None else int(rng.integers(price[0], price[1] + 1)),
            open_hour=hours[0], close_hour=hours[1], lon=round(lon, 6), lat=round(lat, 6), district=district))
    return City(name=name, adcode=adcode, tier=tier, center=center, pois=tuple(pois), districts=_DISTRICTS)


def lifeplanner_available() -> bool:
    return (Path(__file__).resolve().parents[1] / "lifeplanner" / "environment.py").is_file()


def city_from_lifeplanner(db_path: str | Path, name: str = "湖北省/武汉市", adcode: str = "420100",
                          tier: str = "new_first_tier", limit: int | None = None) -> City:
    """The POI table of a LifePlanner city (its DuckDB `places` table). The category is the
    second level of `place_type` ("Top|Sub"); opening hours are read with LifePlanner's own
    parser as the first and last open hour of a Monday (a place it cannot read is 08-22)."""
    if not lifeplanner_available():
        raise RuntimeError("the LifePlanner suite (geoeval/suites/lifeplanner/environment.py) is not present")
    import duckdb

    from geoeval.suites.lifeplanner.environment import is_open

    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute("SELECT id, name, place_type, opentime_week, rating, cost, lon, lat, address FROM places "
                           "ORDER BY id" + (f" LIMIT {int(limit)}" if limit else "")).fetchall()
    finally:
        con.close()
    pois = []
    for pid, pname, ptype, week, rating, cost, lon, lat, address in rows:
        try:
            open_hours = [h for h in range(24) if is_open(week, 0, f"{h:02d}:30")]
        except Exception:  # an unparseable opentime_week: LifePlanner raises its own error type
            open_hours = []
        first, last = monday_span(open_hours)
        pois.append(POI(poi_id=str(pid), name=str(pname), category=str(ptype or "").split("|")[-1] or "Place",
                        rating=float(rating or 0.0), avg_price=int(cost or 0), open_hour=first, close_hour=last,
                        lon=float(lon), lat=float(lat), district=str(address or "").split(",")[0][:20]))
    lons, lats = [p.lon for p in pois], [p.lat for p in pois]
    center = (sum(lons) / len(lons), sum(lats) / len(lats)) if pois else (0.0, 0.0)
    districts = tuple(sorted({p.district for p in pois})) or ("centre",)
    return City(name=name, adcode=adcode, tier=tier, center=center, pois=tuple(pois), districts=districts)


def monday_span(open_hours: list[int]) -> tuple[int, int]:
    """[open, close) from the hours (0-23) a place is open: the run that starts after a closed hour,
    cut at midnight (a place open 08:00-02:00 is 8-24, not 0-24: its after-midnight hours belong to
    the night before). Always open: 0-24; never open or unreadable: 8-22."""
    hours = set(open_hours)
    if not hours:
        return 8, 22
    if len(hours) == 24:
        return 0, 24
    start = min(h for h in hours if (h - 1) % 24 not in hours)
    end = start
    while end < 24 and end in hours:
        end += 1
    return start, end


def distance_m(lon1: float, lat1: float, lon2: float, lat2: float) -> int:
    """Great-circle distance in metres (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return int(round(2 * 6371000 * math.asin(math.sqrt(a))))


# ---------------------------------------------------------------------------------------------
# Users: a profile with behaviour statistics


# decision dimension -> options; counts per option in an earlier and a recent 30-day window
BEHAVIOUR_DIMENSIONS = {
    "price_level": ("实惠", "中等", "高端"),
    "rating": ("高评分", "不限"),
    "travel_mode": ("驾车", "地铁", "打车"),
}
_MODE_API = {"驾车": "driving", "地铁": "transit", "打车": "taxi"}
_PRICE_CAP = {"实惠": 60, "中等": 120, "高端": 400}


@dataclass(frozen=True)
class UserModel:
    uid: str
    home_city: str
    has_car: bool
    # dimension -> option -> (earlier window count, recent window count)
    behaviour: dict[str, dict[str, tuple[int, int]]]

    def totals(self, dim: str) -> dict[str, int]:
        return {o: e + r for o, (e, r) in self.behaviour[dim].items()}

    def top(self, dim: str) -> str:
        tot = self.totals(dim)
        return max(tot, key=lambda o: (tot[o], o))

    def preferences(self) -> dict[str, dict[str, float]]:
        out = {}
        for dim in self.behaviour:
            tot = self.totals(dim)
            n = sum(tot.values())
            out[dim] = {o: round(c / n, 3) for o, c in tot.items()}
        return out

    def profile(self, locality: str) -> dict[str, Any]:
        prefs = self.preferences()
        bits = [f"常住{self.home_city.split('/')[-1]}", "有车" if self.has_car else "无车",
                f"消费偏好{self.top('price_level')}", f"出行习惯{self.top('travel_mode')}"]
        return {"summary": "；".join(bits), "attributes": {"has_car": self.has_car, "home_city": self.home_city,
                                                          "locality": locality},
                "preferences": prefs}

    def action_summary(self) -> dict[str, Any]:
        return {"uid": self.uid, "windows": ["前30天", "近30天"],
                "behaviour": {d: {o: {"前30天": e, "近30天": r} for o, (e, r) in opts.items()}
                              for d, opts in self.behaviour.items()}}


def _make_user(rng: np.random.Generator, index: int, city: City, seed: int) -> UserModel:
    behaviour = {}
    for dim, options in BEHAVIOUR_DIMENSIONS.items():
        favourite = int(rng.integers(len(options)))
        behaviour[dim] = {o: (int(rng.integers(6, 14)) if i == favourite else int(rng.integers(0, 5)),
                              int(rng.integers(4, 16)) if i == favourite else int(rng.integers(0, 5)))
                          for i, o in enumerate(options)}
    home = city.name if rng.random() < 0.8 else "上海市/上海市"
    uid = hashlib.sha1(f"{seed}:{index}".encode()).hexdigest()[:16]
    return UserModel(uid=uid, home_city=home, has_car=bool(rng.random() < 0.55), behaviour=behaviour)


# ---------------------------------------------------------------------------------------------
# Behaviour-chain candidates (restore)


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


_SUB_TASKS = {"search": "nearby_search", "navigation": "route_planning", "ride_hailing": "taxi_estimate",
              "itinerary": "multi_stop_plan", "real_time_info": "traffic_check", "local_services": "table_reservation"}


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
    when = day0 + timedelta(days=int(rng.integers(0, 14)), hours=int(rng.choice([8, 10, 12, 15, 18, 20, 22])),
                            minutes=int(rng.integers(0, 60)))
    dining = city.dining_categories() or city.categories
    category = str(rng.choice(dining if domain in ("search", "local_services") else city.categories))
    hour = when.hour
    places = city.by_category(category)
    origin = city.pois[int(rng.integers(len(city.pois)))]
    cap = _PRICE_CAP[user.top("price_level")]

    def fits(p: POI) -> bool:
        return p.open_at(hour) and (p.avg_price == 0 or p.avg_price <= cap)

    # the anchor h+: the nearest fitting place (the user's later visit), else the nearest one
    ranked = sorted(places, key=lambda p: (distance_m(origin.lon, origin.lat, p.lon, p.lat), p.poi_id))
    target = next((p for p in ranked if fits(p) and p.poi_id != origin.poi_id), ranked[0])
    second = None
    if domain == "itinerary":
        others = [p for p in city.pois if p.category != category and p.open_at(hour)]
        second = min(others or list(city.pois), key=lambda p: (distance_m(target.lon, target.lat, p.lon, p.lat), p.poi_id))
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
    if (domain in ("search", "local_services", "itinerary") and 0 < target.avg_price <= cap
            and (not searched or _on_first_page(origin, target, places))):
        factors.append(Factor("price", "preference", False, f"推荐人均不超过{cap}元的地点",
                              f"用户画像与历史行为：消费偏好{level}", f"人均最好别超过{cap}元"))
    if domain in ("navigation", "itinerary", "ride_hailing"):
        factors.append(Factor("mode", "preference", domain == "navigation",
                              f"按用户的{mode}出行习惯规划", f"用户画像与历史行为：出行习惯{mode}",
                              f"我一般{mode}出行"))
    # context: an earlier same-day event that carries into this task
    with_kids = bool(rng.random() < 0.5)
    if with_kids:
        history.append(f"{earlier} 搜索了“儿童乐园”")
        factors.append(Factor("kids", "context", False, "考虑带孩子同行，推荐适合亲子的地点或路线",
                              "当天早些时候搜索过儿童乐园，本次出行带孩子", "今天带孩子一起"))
    if user.has_car and domain in ("search", "local_services", "itinerary"):
        history.append(f"{earlier} 驾车导航到{origin.name}")
        factors.append(Factor("parking", "context", False, "提示目的地附近的停车条件",
                              "当天驾车导航到当前位置，仍在驾车状态", "我开车过去，要方便停车"))
    # spatio-temporal: the clock and the place
    # the place the user went to was open then and closes soon: it must still be open (a closed anchor shows nothing)
    if target.open_at(hour) and target.close_hour < 24 and target.close_hour - hour <= 3:
        factors.append(Factor("open", "spatio_temporal", True, f"推荐的地点在{hour:02d}:{when.minute:02d}之后仍营业",
                              f"当前时间{when.strftime('%H:%M')}，临近多数门店打烊", "要现在还开着的"))
    # nearness matters for choosing among places, less for a named destination; not every chain has it
    if domain in ("search", "local_services", "itinerary") and rng.random() < 0.5:
        factors.append(Factor("near", "spatio_temporal", False, "优先考虑离当前位置近的选项",
                              f"用户当前位于{origin.name}", "离我近一点"))
    # only the post-query behaviour shows it: dropped by the filter, a clarification may ask it
    factors.append(Factor("party", "post_query", False, f"按{party}人安排", f"事后到店{party}人",
                          f"一共{party}个人"))
    query, explicit = _query_and_explicit(domain, category, target, second)
    return Candidate(domain=domain, sub_task=_SUB_TASKS[domain], user=user, when=when, origin=origin, target=target,
                     second=second, history=history, query=query, explicit=explicit, factors=factors,
                     locality=locality, party=party)


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
    kept, dropped = [], []
    for f in identified:
        if f.source in IMPLICIT_FACTOR_SOURCES:
            f.weight = _weight(c, f)
            (kept if f.weight > 0 else dropped).append(f)
        else:
            dropped.append(f)
    return kept, dropped


# ---------------------------------------------------------------------------------------------
# tools: the expected calls, and their responses computed from the POI table


def _calls(c: Candidate, city: City, needs_profile: bool) -> list[tuple[str, dict[str, Any]]]:
    o, t = c.origin, c.target
    calls: list[tuple[str, dict[str, Any]]] = []
    if needs_profile:
        calls.append(("search_user_action_summary", {"uid": c.user.uid}))
    nav = {"start_lon": o.lon, "start_lat": o.lat, "end_lon": t.lon, "end_lat": t.lat, "start_name": o.name,
           "end_name": t.name}
    if c.domain == "search":
        calls.append(("search_around_poi", {"query": t.category, "x": o.lon, "y": o.lat, "range": 5000}))
    elif c.domain == "navigation":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_navigation", {**nav, "mode": _MODE_API[c.user.top("travel_mode")]}))
    elif c.domain == "ride_hailing":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_taxi_route_plan", {**nav, "end_poi_id": t.poi_id}))
    elif c.domain == "itinerary":
        assert c.second is not None
        calls.append(("optimize_visit_order", {"start_lon": o.lon, "start_lat": o.lat, "start_name": o.name,
                                               "via_points": f"{t.location};{c.second.location}",
                                               "via_names": f"{t.name};{c.second.name}",
                                               "mode": _MODE_API[c.user.top("travel_mode")]}))
    elif c.domain == "real_time_info":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_route_traffic_info", {"poi_id": t.poi_id}))
    else:
        calls.append(("search_around_poi", {"query": t.category, "x": o.lon, "y": o.lat, "range": 5000}))
        calls.append(("restaurant_reservation", {"poi_id": t.poi_id, "people_num": c.party,
                                                 "order_time": c.when.strftime("%Y-%m-%d %H:%M")}))
    return calls


SEARCH_PAGE = 10  # POIs a nearby search returns (one page, nearest first)
_SPEED_KMH = {"driving": 30.0, "transit": 22.0, "taxi": 30.0, "walking": 4.5}


def _congestion(poi_id: str, hour: int) -> tuple[str, int]:
    rush = hour in (8, 9, 17, 18, 19)
    h = int(hashlib.sha1(poi_id.encode()).hexdigest()[:4], 16) % 3
    level = ("拥堵", "缓行", "缓行")[h] if rush else ("畅通", "畅通", "缓行")[h]
    return level, {"拥堵": 12, "缓行": 22, "畅通": 38}[level]


def _respond(tool: str, args: dict[str, Any], c: Candidate, city: City) -> dict[str, Any]:
    """The response of a tool call, computed from the POI table (deterministic)."""
    hour = c.when.hour
    by_id = {p.poi_id: p for p in city.pois}
    if tool == "search_user_action_summary":
        return {"status": "ok", **c.user.action_summary()}
    if tool == "search_around_poi":
        x, y, rng_m = float(args["x"]), float(args["y"]), int(args.get("range") or 3000)
        near = sorted(((distance_m(x, y, p.lon, p.lat), p.poi_id, p) for p in city.by_category(str(args["query"]))))
        hits = [(d, p) for d, _, p in near if d <= rng_m][:SEARCH_PAGE]
        return {"status": "ok", "count": len(hits), "pois": [
            {"poi_id": p.poi_id, "name": p.name, "rating": p.rating, "avg_price": p.avg_price,
             "open_hours": p.hours_text, "open_now": p.open_at(hour), "distance_m": d} for d, p in hits]}
    if tool == "search_poi":
        hits = [p for p in city.pois if str(args["query"]) in p.name][:3]
        return {"status": "ok", "count": len(hits), "pois": [
            {"poi_id": p.poi_id, "name": p.name, "location": p.location, "district": p.district,
             "open_hours": p.hours_text} for p in hits]}
    if tool in ("get_navigation", "get_taxi_route_plan"):
        d = distance_m(float(args["start_lon"]), float(args["start_lat"]), float(args["end_lon"]), float(args["end_lat"]))
        road = int(d * 1.3)  # road distance over the straight line
        mode = str(args.get("mode") or "taxi") if tool == "get_navigation" else "taxi"
        minutes = max(1, round(road / 1000 / _SPEED_KMH.get(mode, 30.0) * 60))
        if tool == "get_navigation":
            return {"status": "ok", "mode": mode, "distance_m": road, "duration_min": minutes,
                    "parking": "目的地有停车场" if mode == "driving" else ""}
        return {"status": "ok", "distance_km": round(road / 1000, 1), "duration_min": minutes,
                "price_estimate_yuan": round(13 + max(0.0, road / 1000 - 3) * 2.5, 1)}
    if tool == "optimize_visit_order":
        names = str(args["via_names"]).split(";")
        pts = [tuple(float(v) for v in s.split(",")) for s in str(args["via_points"]).split(";")]
        start = (float(args["start_lon"]), float(args["start_lat"]))
        legs = [distance_m(*start, *pts[0]), distance_m(*pts[0], *pts[1])]
        alt = [distance_m(*start, *pts[1]), distance_m(*pts[1], *pts[0])]
        order = names if sum(legs) <= sum(alt) else names[::-1]
        total = int(min(sum(legs), sum(alt)) * 1.3)
        return {"status": "ok", "order": order, "total_distance_m": total,
                "total_duration_min": max(1, round(total / 1000 / _SPEED_KMH.get(str(args.get("mode")), 30.0) * 60))}
    if tool == "get_route_traffic_info":
        level, speed = _congestion(str(args["poi_id"]), hour)
        return {"status": "ok", "poi_id": args["poi_id"], "congestion": level, "avg_speed_kmh": speed}
    if tool == "restaurant_reservation":
        p = by_id[str(args["poi_id"])]
        slots = [f"{h:02d}:{m:02d}" for h in range(hour, min(p.close_hour, hour + 3)) for m in (0, 30)][:4]
        return {"status": "ok", "poi_id": p.poi_id, "name": p.name, "people_num": args.get("people_num"),
                "available_slots": slots, "table_type": "大厅" if (args.get("people_num") or 2) <= 4 else "包间"}
    raise KeyError(f"no response model for tool {tool}")


_PARAM_RULES = {
    "search_around_poi": {"query": "目标地点类别", "x": "当前位置经度", "y": "当前位置纬度"},
    "search_poi": {"query": "目的地名称", "cur_adcode": "当前城市编码"},
    "get_navigation": {"start_lon": "起点经度", "start_lat": "起点纬度", "end_lon": "终点经度", "end_lat": "终点纬度",
                       "mode": "与用户出行习惯一致的方式"},
    "get_taxi_route_plan": {"start_lon": "起点经度", "start_lat": "起点纬度", "end_lon": "终点经度", "end_lat": "终点纬度"},
    "optimize_visit_order": {"start_lon": "起点经度", "start_lat": "起点纬度", "via_points": "途经点坐标，分号分隔"},
    "get_route_traffic_info": {"poi_id": "目的地poi_id"},
    "restaurant_reservation": {"poi_id": "所选门店poi_id"},
    "search_user_action_summary": {"uid": "用户id"},
}
# parameters the case requires beyond what the tool needs to run
_CASE_REQUIRED = {"search_around_poi": ["query", "x", "y"], "get_navigation": ["start_lon", "start_lat", "end_lon",
                                                                               "end_lat", "mode"]}


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


def _instance(c: Candidate, city: City, kept: list[Factor], dropped: list[Factor], index: int,
              seed: int) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any], dict[str, Any]]]]:
    from geoeval.suites.mapsatisfy.replay import TOOL_SPECS

    task_id = hashlib.sha1(f"mapsatisfy-gen:{seed}:{index}".encode()).hexdigest()[:32]
    needs_profile = any(f.source == "preference" for f in kept)
    calls = _calls(c, city, needs_profile)
    recorded = [(tool, args, _respond(tool, args, c, city)) for tool, args in calls]
    tools = list(dict.fromkeys(t for t, _ in calls))
    rules = {}
    for tool in tools:
        required = list(dict.fromkeys([*TOOL_SPECS[tool].required, *_CASE_REQUIRED.get(tool, [])]))
        rules[tool] = {"paramter": required,
                       "rules": [{"param": p, "rule_description": d} for p, d in _PARAM_RULES.get(tool, {}).items()]}
    rubric = ["回答中的地点名称、距离、时间、价格等事实须与工具返回一致"]
    if c.domain in ("search", "local_services"):
        rubric.append("推荐的门店须来自周边搜索结果")
    if c.domain in ("navigation", "ride_hailing", "itinerary"):
        rubric.append("路线距离与用时须来自路线规划结果")
    intent = "；".join([c.query] + [f.intent for f in c.factors])
    record = {
        "task_id": task_id, "query": c.query, "full_intent": intent,
        "context": {"uid": c.user.uid, "time": c.when.strftime("%Y-%m-%d %H:%M:%S"), "user_current_loc": c.origin.location,
                    "user_loc_name": c.origin.name, "city": city.name, "history": c.history},
        "user_profile": c.user.profile(c.locality),
        "ground_truth": {
            "explicit_intent": c.explicit,
            "implicit_intent": [{"rubric_instruction": f.rubric, "constraint_type": "hard" if f.hard else "soft",
                                 "evidence_confidence": f.weight, "evidence": f.evidence, "source": f.source}
                                for f in kept],
            # what only the post-query behaviour shows cannot be inferred: the agent may ask it
            "clarification_policy": {"max_allowed": max(1, len(dropped)),
                                     "evidence": "；".join(f.intent for f in dropped) or "无需澄清"},
            "truth_trajectory": {"tool_calls": {"expected_tools": tools, "parameter_rules": rules,
                                                "factual_answer_rubric": rubric}},
        },
        "metadata": {"domain": [c.domain], "sub_task": [c.sub_task],
                     "implicit_factor_source": sorted({f.source for f in kept}),
                     "time_slot": time_slot(c.when.hour), "day_type": "weekend" if c.when.weekday() >= 5 else "weekday",
                     "city_tier": city.tier, "locality": c.locality, "difficulty": difficulty_of(kept)},
    }
    return record, recorded


def generate(n: int, seed: int = 0, city: City | None = None, n_users: int = 40,
             day0: datetime = datetime(2026, 6, 1)) -> Generated:
    """`n` instances over `city` (default: `synthetic_city(seed)`), the six domains in turn, and a
    store holding every expected call of every instance (trace id = task id)."""
    from geoeval.suites.mapsatisfy.replay import RecordStore

    city = city or synthetic_city(seed)
    rng = np.random.default_rng(seed + 7919)
    users = [_make_user(rng, i, city, seed) for i in range(n_users)]
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
            store.add(tool, args, json.dumps(response, ensure_ascii=False), trace_id=record["task_id"],
                      source=f"generated:{seed}")
        instances.append(parse_instance(record))
        funnel["accepted"] += 1
    return Generated(instances=instances, store=store, city=city, funnel=funnel)


# ---------------------------------------------------------------------------------------------
# coverage statistics (Figure 3, Table B1)


def coverage(instances: list[MapSatisfyInstance]) -> dict[str, Counter]:
    """Counts per metadata dimension. Domain, sub-task and source are multi-label hits (an instance
    counts once per label, as Table B1 counts sources); factors count hard / soft per source."""
    out: dict[str, Counter] = {k: Counter() for k in ("domain", "sub_task", "implicit_factor_source", "time_slot",
                                                      "day_type", "city_tier", "locality", "difficulty",
                                                      "constraint_type", "expected_tool")}
    for inst in instances:
        m = inst.metadata
        for key in ("domain", "sub_task", "implicit_factor_source"):
            out[key].update(getattr(m, key))
        for key in ("time_slot", "day_type", "city_tier", "locality", "difficulty"):
            if getattr(m, key):
                out[key][getattr(m, key)] += 1
        for f in inst.ground_truth.implicit_intent:
            out["constraint_type"][f"{f.source or 'unknown'}:{f.constraint_type}"] += 1
        out["expected_tool"].update(inst.expected_tools)
    return out


def coverage_markdown(instances: list[MapSatisfyInstance], funnel: Counter | None = None) -> str:
    n = len(instances)
    lines = [f"# MapSatisfy generated instances: coverage ({n} instances)", ""]
    titles = {"domain": "Domain (Figure 3)", "sub_task": "Sub-task (Figure 3)",
              "implicit_factor_source": "Implicit-factor source, multi-label hits (Table B1)",
              "time_slot": "Time slot", "day_type": "Day type", "city_tier": "City tier", "locality": "Locality",
              "difficulty": "Difficulty", "constraint_type": "Factors by source:constraint type",
              "expected_tool": "Expected tool (instances)"}
    for key, counts in coverage(instances).items():
        lines += [f"## {titles[key]}", "", "| value | count | share |", "| --- | ---: | ---: |"]
        for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {value} | {count} | {count / n:.1%} |" if n else f"| {value} | {count} | - |")
        lines.append("")
    if funnel:
        lines += ["## restore -> identify -> filter", "", "| step | count |", "| --- | ---: |"]
        lines += [f"| {k} | {funnel[k]} |" for k in ("restored", "identified_factors", "retained_factors",
                                                      "dropped_factors", "rejected", "accepted")]
        lines.append("")
    return "\n".join(lines)


def print_coverage(instances: list[MapSatisfyInstance], funnel: Counter | None = None,
                   path: str | Path | None = None) -> str:
    """Print the coverage tables, and write them as Markdown when `path` is given."""
    text = coverage_markdown(instances, funnel)
    print(text)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text


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
