"""Generating the synthetic city's road network and places (seeded)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner.city.schema import ROAD_SPEEDS
from geoeval.suites.lifeplanner.city.vocabulary import (
    _FOOTWAY_NAMES,
    CATEGORIES,
    LONG_MEM_VOCAB,
    PROFILE_OF,
    SHORT_MEM_VOCAB,
    SYLLABLES,
    _vocab_for,
)

# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

_M_PER_DEG_LAT = 110_540.0


def _m_per_deg_lon(lat: float) -> float:
    return 111_320.0 * math.cos(math.radians(lat))


def _word(rng: np.random.Generator, n_syll: int = 2) -> str:
    idx = rng.integers(0, len(SYLLABLES), n_syll)
    w = "".join(SYLLABLES[i] for i in idx)
    return w[0].upper() + w[1:].lower()


def _unique_words(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        w = _word(rng)
        if w not in taken:
            taken.add(w)
            out.append(w)
    return out


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.p = list(range(n))

    def find(self, a: int) -> int:
        while self.p[a] != a:
            self.p[a] = self.p[self.p[a]]
            a = self.p[a]
        return a

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.p[max(ra, rb)] = min(ra, rb)
        return True


def _build_roads(rng: np.random.Generator, side_m: float, spacing_m: float) -> dict[str, Any]:
    """A perturbed street grid: every row and column is a named road; every 6th is a primary avenue,
    every 3rd a secondary road; a few residential segments are missing or pedestrian-only. All
    nodes stay connected for every vehicle."""
    n = max(3, int(round(side_m / spacing_m)) + 1)
    step = side_m / (n - 1)
    jj, ii = np.meshgrid(np.arange(n), np.arange(n))
    jitter = rng.uniform(-0.15 * step, 0.15 * step, size=(2, n, n))
    x = (jj * step + jitter[0]).ravel()
    y = (ii * step + jitter[1]).ravel()
    x = np.clip(x, 0.0, side_m)
    y = np.clip(y, 0.0, side_m)

    taken: set[str] = set()
    names = _unique_words(rng, 2 * n, taken)
    row_class = ["primary" if i % 6 == 0 else "secondary" if i % 3 == 0 else "residential" for i in range(n)]
    suffix = {"primary": "Avenue", "secondary": "Road", "residential": "Street"}
    row_names = [f"{names[i]} {suffix[row_class[i]]}" for i in range(n)]
    col_names = [
        f"{names[n + j]} {suffix[row_class[j]] if row_class[j] != 'residential' else 'Lane'}" for j in range(n)
    ]

    # candidate edges, rows then columns, in a fixed order
    src, dst, road, cls = [], [], [], []
    for i in range(n):
        for j in range(n - 1):
            src.append(i * n + j)
            dst.append(i * n + j + 1)
            road.append(row_names[i])
            cls.append(row_class[i])
    for j in range(n):
        for i in range(n - 1):
            src.append(i * n + j)
            dst.append((i + 1) * n + j)
            road.append(col_names[j])
            cls.append(row_class[j])
    m = len(src)
    u = rng.random(m)
    residential = np.array([c == "residential" for c in cls])
    removed = residential & (u < 0.04)
    footway = residential & (u >= 0.04) & (u < 0.09)
    footway_pick = rng.integers(0, len(_FOOTWAY_NAMES), m)

    # keep the walking graph connected: re-add removed edges that join components
    uf = _UnionFind(n * n)
    for e in range(m):
        if not removed[e]:
            uf.union(src[e], dst[e])
    for e in range(m):
        if removed[e] and uf.union(src[e], dst[e]):
            removed[e] = False
    # keep the driving graph connected: turn pedestrian segments back into streets where needed
    ufd = _UnionFind(n * n)
    for e in range(m):
        if not removed[e] and not footway[e]:
            ufd.union(src[e], dst[e])
    for e in range(m):
        if footway[e] and ufd.union(src[e], dst[e]):
            footway[e] = False

    keep = np.flatnonzero(~removed)
    ways = []
    for gid, kept in enumerate(keep, start=1):
        a, b = src[kept], dst[kept]
        hw = "footway" if footway[kept] else cls[kept]
        name = _FOOTWAY_NAMES[footway_pick[kept]] if footway[kept] else road[kept]
        length = float(math.hypot(x[a] - x[b], y[a] - y[b]))
        sp = ROAD_SPEEDS[hw]
        ways.append((gid, name, hw, a, b, [a, b], round(length, 1), sp["walking"], sp["cycling"], sp["driving"]))
    return {"n": n, "x": x, "y": y, "ways": ways, "row_names": row_names, "col_names": col_names}


def _hours_text(style: str, rng: np.random.Generator) -> str:
    o = int(rng.choice([7, 8, 9, 10, 10, 11]))
    c = int(rng.choice([20, 21, 21, 22, 22, 23]))
    half = ":30" if rng.random() < 0.25 else ":00"
    if style == "day":
        return f"Monday-Sunday {o:02d}:00-{c:02d}{half}"
    if style == "split":
        return f"Monday-Sunday 11:00-14:00,17:00-{c:02d}{half}"
    if style == "closed_monday":
        return f"Tuesday-Sunday {o:02d}:00-{c:02d}{half}"
    if style == "closed_tuesday":
        return f"Monday-Sunday {o:02d}:00-{c:02d}:00; Tuesday closed"
    if style == "closed_sunday":
        return f"Monday-Saturday {o:02d}:00-{c:02d}:00; Sunday closed"
    if style == "late":
        return f"Monday-Sunday {o:02d}:00-{int(rng.choice([0, 1, 2])):02d}:{'30' if rng.random() < 0.5 else '00'}"
    if style == "night":
        return f"Monday-Sunday {int(rng.choice([18, 19, 20])):02d}:00-02:00"
    if style == "closed_monday_night":
        return "Tuesday-Sunday 19:00-02:00"
    if style == "weekday_weekend":
        return f"Monday-Friday {o:02d}:00-{c:02d}:00; Saturday-Sunday {min(o + 1, 11):02d}:00-{c - 1:02d}:00"
    if style == "weekday":
        return "Monday-Friday 09:00-18:00 (closed on public holidays)"
    if style == "always":
        return "Monday-Sunday 00:00-24:00" if rng.random() < 0.7 else "Open 24 hours"
    if style == "park":
        return "Monday-Sunday 06:00-22:00"
    if style == "museum":
        return "Tuesday-Sunday 09:00-17:00 (last entry 16:30)"
    if style == "unknown":
        return ""
    raise ValueError(f"unknown hours style {style}")


def _place_id(rng: np.random.Generator, taken: set[str]) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    while True:
        pid = "B0" + "".join(alphabet[i] for i in rng.integers(0, 36, 8))
        if pid not in taken:
            taken.add(pid)
            return pid


def _format_tags(groups: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups)


def _typo(word: str, rng: np.random.Generator) -> str:
    if len(word) < 4:
        return word.lower()
    k = int(rng.integers(1, len(word) - 1))
    if rng.random() < 0.5:
        return word[:k] + word[k + 1 :]  # a dropped letter
    return word[: k - 1] + word[k] + word[k - 1] + word[k + 1 :]  # swapped letters


def _build_places(
    rng: np.random.Generator,
    n_places: int,
    side_m: float,
    roads: dict[str, Any],
    districts: list[tuple[str, float, float]],
) -> list[dict[str, Any]]:
    weights = np.array([c.weight for c in CATEGORIES], dtype=float)
    cat_idx = rng.choice(len(CATEGORIES), size=n_places, p=weights / weights.sum())
    # positions: half around district centres (commercial clusters), half uniform
    centres = np.array([(dx, dy) for _, dx, dy in districts])
    which = rng.integers(0, len(districts), n_places)
    clustered = rng.random(n_places) < 0.5
    spread = side_m / (2.5 * math.sqrt(len(districts)))
    px = np.where(clustered, centres[which, 0] + rng.normal(0, spread, n_places), rng.uniform(0, side_m, n_places))
    py = np.where(clustered, centres[which, 1] + rng.normal(0, spread, n_places), rng.uniform(0, side_m, n_places))
    px = np.clip(px, 0.0, side_m)
    py = np.clip(py, 0.0, side_m)
    # nearest road node and the district a place belongs to (vectorised in chunks)
    nx, ny = roads["x"], roads["y"]
    node_of = np.empty(n_places, dtype=np.int64)
    for s in range(0, n_places, 2048):
        d2 = (px[s : s + 2048, None] - nx[None, :]) ** 2 + (py[s : s + 2048, None] - ny[None, :]) ** 2
        node_of[s : s + 2048] = np.argmin(d2, axis=1)
    access = np.hypot(px - nx[node_of], py - ny[node_of])
    district_of = np.argmin((px[:, None] - centres[None, :, 0]) ** 2 + (py[:, None] - centres[None, :, 1]) ** 2, axis=1)
    popularity = rng.lognormal(0.0, 1.0, n_places)
    rating_raw = np.clip(rng.normal(4.1, 0.45, n_places), 1.0, 5.0)
    u_cost, u_alias, u_mem = rng.random(n_places), rng.random(n_places), rng.random(n_places)
    n_rows = roads["n"]

    used_names: set[str] = set()
    ids: set[str] = set()
    places = []
    for k in range(n_places):
        cat = CATEGORIES[cat_idx[k]]
        district = districts[district_of[k]][0]
        chain = bool(cat.brands) and rng.random() < 0.35
        if chain:
            brand = cat.brands[int(rng.integers(0, len(cat.brands)))]
            name = f"{brand} ({district} Branch)"
            n_try = 2
            while name in used_names:
                name = f"{brand} ({district} Branch No.{n_try})"
                n_try += 1
        else:
            brand = ""
            while True:
                name = f"{_word(rng)} {cat.nouns[int(rng.integers(0, len(cat.nouns)))]}"
                if name not in used_names:
                    break
        used_names.add(name)
        # alias: an older or shorter name; sometimes it collides with another place's words
        alias = ""
        if u_alias[k] < 0.3:
            alias = brand.split()[0] if brand else name.split()[0]
            if rng.random() < 0.5:
                alias = f"{alias} {district}"
        # tags: 1-3 groups of the category, 1-3 values each
        n_groups = int(rng.integers(1, min(3, len(cat.tags)) + 1))
        g_idx = sorted(rng.choice(len(cat.tags), size=n_groups, replace=False))
        groups = []
        for gi in g_idx:
            key, vals = cat.tags[gi]
            n_vals = int(rng.integers(1, min(3, len(vals)) + 1))
            groups.append((key, [vals[i] for i in sorted(rng.choice(len(vals), size=n_vals, replace=False))]))
        # memory distilled from posts (hidden from the evaluated agent)
        profile = PROFILE_OF.get(cat.place_type, "shop")
        p_mem = 0.25 if profile == "plain" else 0.6
        lm_groups = []
        for key, vals in _vocab_for(LONG_MEM_VOCAB, profile):
            if rng.random() < p_mem:
                n_vals = int(rng.integers(1, min(2, len(vals)) + 1))
                lm_groups.append((key, [vals[i] for i in sorted(rng.choice(len(vals), size=n_vals, replace=False))]))
        sm_groups = []
        short_vocab = _vocab_for(SHORT_MEM_VOCAB, profile)
        if short_vocab and u_mem[k] < (0.15 if profile == "plain" else 0.45):
            key, vals = short_vocab[int(rng.integers(0, len(short_vocab)))]
            sm_groups.append((key, [vals[int(rng.integers(0, len(vals)))]]))
        style = cat.hours[int(rng.integers(0, len(cat.hours)))]
        hours = _hours_text(style, rng)
        cost = None
        if cat.cost is not None and u_cost[k] < 0.93:
            lo, hi = cat.cost
            cost = float(int(rng.integers(lo, hi + 1)))
        rating = None if (cat.cost is None and rng.random() < 0.3) else round(float(rating_raw[k]), 1)
        node = int(node_of[k])
        i_row, j_col = divmod(node, n_rows)
        road = roads["row_names"][i_row] if rng.random() < 0.5 else roads["col_names"][j_col]
        address = f"No. {int(rng.integers(1, 300))} {road}"
        if rng.random() < 0.5:
            address += f" ({int(rng.integers(2, 9)) * 50}m from Metro {district} Station Exit {'ABCD'[int(rng.integers(0, 4))]})"
        places.append(
            {
                "id": _place_id(rng, ids),
                "name": name,
                "place_type": cat.place_type,
                "address": address,
                "opentime_week": hours,
                "rating": rating,
                "cost": cost,
                "tag": _format_tags(groups),
                "alias": alias,
                "long_mem": _format_tags(lm_groups),
                "short_mem": _format_tags(sm_groups),
                "x_m": round(float(px[k]), 2),
                "y_m": round(float(py[k]), 2),
                "node_id": node,
                "access_m": round(float(access[k]), 1),
                "popularity": round(float(popularity[k]), 4),
                # generation-only fields (not stored)
                "_brand": brand,
                "_district": district,
                "_road": road,
                "_noun": cat.place_type.split("|")[1].lower(),
                "_tags": groups,
                "_long": lm_groups,
                "_short": sm_groups,
            }
        )
    return places
