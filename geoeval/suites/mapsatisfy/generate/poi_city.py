"""The generator's city: a POI table (`POI`, `City`), seeded synthetic (`synthetic_city`) or read
from a LifePlanner city's DuckDB `places` table (`city_from_lifeplanner`), and the distance and
opening-hour helpers the generator computes tool responses with."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from geoeval.suites.lifeplanner.city.opening_hours import is_open

#: POIs a nearby search of the generator's city returns (one page, nearest first)
SEARCH_PAGE = 10


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


def synthetic_city(
    seed: int = 0,
    n_pois: int = 360,
    name: str = "浙江省/杭州市",
    adcode: str = "330100",
    tier: str = "new_first_tier",
    center: tuple[float, float] = (120.155, 30.274),
) -> City:
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
        pois.append(
            POI(
                poi_id=f"B0{seed % 1000:03d}{i:05d}",
                name=f"{brand}{category}({district[:2]}{i}店)",
                category=category,
                rating=round(float(np.clip(rng.normal(4.2, 0.4), 3.2, 4.9)), 1),
                avg_price=0 if price is None else int(rng.integers(price[0], price[1] + 1)),
                open_hour=hours[0],
                close_hour=hours[1],
                lon=round(lon, 6),
                lat=round(lat, 6),
                district=district,
            )
        )
    return City(name=name, adcode=adcode, tier=tier, center=center, pois=tuple(pois), districts=_DISTRICTS)


def lifeplanner_available() -> bool:
    return (Path(__file__).resolve().parents[2] / "lifeplanner" / "city" / "environment.py").is_file()


def city_from_lifeplanner(
    db_path: str | Path,
    name: str = "湖北省/武汉市",
    adcode: str = "420100",
    tier: str = "new_first_tier",
    limit: int | None = None,
) -> City:
    """The POI table of a LifePlanner city (its DuckDB `places` table). The category is the
    second level of `place_type` ("Top|Sub"); opening hours are read with LifePlanner's own
    parser as the first and last open hour of a Monday (a place it cannot read is 08-22)."""
    if not lifeplanner_available():
        raise RuntimeError("the LifePlanner suite (geoeval/suites/lifeplanner/city/environment.py) is not present")
    import duckdb

    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute(
            "SELECT id, name, place_type, opentime_week, rating, cost, lon, lat, address FROM places "
            "ORDER BY id" + (f" LIMIT {int(limit)}" if limit else "")
        ).fetchall()
    finally:
        con.close()
    pois = []
    for pid, pname, ptype, week, rating, cost, lon, lat, address in rows:
        try:
            open_hours = [h for h in range(24) if is_open(week, 0, f"{h:02d}:30")]
        except Exception:  # an unparseable opentime_week: LifePlanner raises its own error type
            open_hours = []
        first, last = monday_span(open_hours)
        pois.append(
            POI(
                poi_id=str(pid),
                name=str(pname),
                category=str(ptype or "").split("|")[-1] or "Place",
                rating=float(rating or 0.0),
                avg_price=int(cost or 0),
                open_hour=first,
                close_hour=last,
                lon=float(lon),
                lat=float(lat),
                district=str(address or "").split(",")[0][:20],
            )
        )
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
