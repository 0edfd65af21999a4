"""Tests for the pixel-only map reader (`geoeval.suites.maptab.perception.reader`).

The accuracy tests render maps with `render/image.py`, read them back with OCR and compare the
answered routes with the true fewest-station routes, at full size and at resolutions
where the labels can no longer be read.
"""

from __future__ import annotations

import difflib
import math
import random
import time

import pytest

from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.perception.answers import match_station_name, route_on_perceived
from geoeval.suites.maptab.perception.ocr import get_ocr_engine
from geoeval.suites.maptab.perception.perceived import PerceivedMap, PerceivedStation
from geoeval.suites.maptab.perception.reader import read_map_image
from geoeval.suites.maptab.render.image import compute_layout, render_map
from geoeval.suites.maptab.routing.reference import fewest_station_routes

from .test_render import build_map

# --------------------------------------------------------------------------- fixtures

NAMES = [
    "Maple Grove",
    "Harbor Point",
    "Cedar Hill",
    "Kingsbridge",
    "Riverside",
    "Oakwood",
    "Fairview",
    "Stonegate",
    "Bellmont",
    "Wexford",
    "Ashbury",
    "Quarry Lane",
    "Northfield",
    "Juniper",
    "Cobalt Street",
    "Foxhollow",
    "Granite Bay",
    "Ironworks",
    "Kelvin",
    "Newhaven",
    "Orchard",
    "Pinecrest",
    "Queensway",
    "Redcliff",
    "Silverton",
    "Union Square",
]


def hand_built_map() -> MetroMap:
    """26 stations on a 200 px grid of a 2000x1600 canvas, four lines.

    Red and Blue share the track (1000,800)-(1200,800)-(1400,800), so those edges carry
    both lines (parallel strokes); Green is a loop; Orange crosses the shared section's
    end at a three-line interchange. The generator never shares track, hence this map.
    """
    red = [(0, 1), (1, 1), (2, 1), (3, 2), (4, 3), (5, 3), (6, 3), (7, 4), (8, 5)]
    blue = [(3, 6), (3, 5), (3, 4), (4, 3), (5, 3), (6, 3), (7, 2), (8, 1)]
    green = [(1, 3), (2, 3), (3, 3), (3, 4), (2, 5), (1, 5), (0, 4)]
    orange = [(6, 0), (6, 1), (6, 2), (6, 3), (6, 4), (6, 5), (6, 6)]
    points: list[tuple[int, int]] = []
    for walk in (red, blue, green, orange):
        points += [p for p in walk if p not in points]
    name = dict(zip(points, NAMES))
    coords = {name[p]: (200 + 200 * p[0], 200 + 200 * p[1]) for p in points}
    lines = {
        "Red Line": ("#E32017", [name[p] for p in red], False),
        "Blue Line": ("#0072CE", [name[p] for p in blue], False),
        "Green Line": ("#00A651", [name[p] for p in green], True),
        "Orange Line": ("#F7941D", [name[p] for p in orange], False),
    }
    return build_map("hand_built", coords, lines, 2000, 1600)


def generated_map(seed: int) -> MetroMap:
    from geoeval.suites.maptab.generator.metro import generate_metro_map

    return generate_metro_map(seed, n_lines=4)


MAPS = {"hand_built": hand_built_map, "generated_1": lambda: generated_map(1), "generated_3": lambda: generated_map(3)}


@pytest.fixture(scope="module")
def maps() -> dict[str, MetroMap]:
    return {key: make() for key, make in MAPS.items()}


_PERCEIVED: dict[tuple[str, float], tuple[PerceivedMap, float]] = {}


def perceived(maps, key: str, scale: float) -> tuple[PerceivedMap, float]:
    """read_map_image of a rendered map (cached across tests), with its wall time."""
    if (key, scale) not in _PERCEIVED:
        img = render_map(maps[key], scale=scale)
        t0 = time.perf_counter()
        pm = read_map_image(img)
        _PERCEIVED[(key, scale)] = (pm, time.perf_counter() - t0)
    return _PERCEIVED[(key, scale)]


# --------------------------------------------------------------------------- reference answers


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower().strip(), b.lower().strip()).ratio()


def min_transfer_markings(m: MetroMap, path: list[str]) -> set[frozenset[int]]:
    """Every set of station positions marked "(transfer)" by some line assignment with the
    fewest line changes along `path`."""
    runs = [m.edge_between(a, b).lines for a, b in zip(path, path[1:])]
    best: dict[str, tuple[int, set[frozenset[int]]]] = {ln: (0, {frozenset()}) for ln in runs[0]}
    for i in range(1, len(runs)):
        nxt: dict[str, tuple[int, set[frozenset[int]]]] = {}
        for ln in runs[i]:
            for prev, (cost, marks) in best.items():
                c = cost + (prev != ln)
                ms = {mk | {i} for mk in marks} if prev != ln else set(marks)
                if ln not in nxt or c < nxt[ln][0]:
                    nxt[ln] = (c, ms)
                elif c == nxt[ln][0]:
                    nxt[ln] = (c, nxt[ln][1] | ms)
        best = nxt
    fewest = min(c for c, _ in best.values())
    return set().union(*(ms for c, ms in best.values() if c == fewest))


def route_is_correct(m: MetroMap, source: str, target: str, answer: str | None) -> bool:
    """Same length as a true fewest-station route, every station name difflib-similar
    (>= 0.5) to the true one, and "(transfer)" at the same positions as a fewest-transfer
    reading of that route."""
    if answer is None:
        return False
    parts = answer.split("-")
    names = [p.removesuffix("(transfer)") for p in parts]
    marks = frozenset(i for i, p in enumerate(parts) if p.endswith("(transfer)"))
    for path in fewest_station_routes(m, source, target):
        close = len(path) == len(names) and all(_ratio(a, b) >= 0.5 for a, b in zip(path, names))
        if close and marks in min_transfer_markings(m, path):
            return True
    return False


def sample_pairs(m: MetroMap, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Origin-destination pairs whose fewest-station route has at least 3 stations."""
    names = sorted(m.stations)
    pairs = [(a, b) for a in names for b in names if a != b and len((fewest_station_routes(m, a, b) or [[]])[0]) >= 3]
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


def accuracy(maps, scale: float, pairs_per_map: int = 30) -> float:
    good = total = 0
    for key, m in maps.items():
        pm, _ = perceived(maps, key, scale)
        for s, t in sample_pairs(m, pairs_per_map):
            good += route_is_correct(m, s, t, route_on_perceived(pm, s, t))
            total += 1
    return good / total


# --------------------------------------------------------------------------- fixture sanity


def _segment_point_distance(a, b, p) -> float:
    dx, dy = b.x - a.x, b.y - a.y
    t = max(0.0, min(1.0, ((p.x - a.x) * dx + (p.y - a.y) * dy) / (dx * dx + dy * dy)))
    return math.hypot(a.x + t * dx - p.x, a.y + t * dy - p.y)


@pytest.mark.parametrize("key", sorted(MAPS))
def test_test_maps_meet_the_generator_layout_guarantees(maps, key):
    m = maps[key]
    assert 20 <= len(m.stations) <= 35
    assert sum(st.is_transfer for st in m.stations.values()) >= 2
    sts = list(m.stations.values())
    for i, a in enumerate(sts):
        assert 120 <= a.x <= m.width - 120 and 120 <= a.y <= m.height - 120
        for b in sts[i + 1 :]:
            assert math.hypot(a.x - b.x, a.y - b.y) >= 120
            assert _ratio(a.name, b.name) < 0.5, (a.name, b.name)
    for e in m.edges:
        for st in sts:
            if st.name not in (e.a, e.b):
                assert _segment_point_distance(m.stations[e.a], m.stations[e.b], st) >= 30


def test_hand_built_map_has_shared_track_and_a_loop(maps):
    m = maps["hand_built"]
    assert sum(len(e.lines) == 2 for e in m.edges) == 2
    green = m.lines["Green Line"]
    assert green.loop
    assert m.edge_between(green.stations[-1], green.stations[0]) is not None  # closing edge


# --------------------------------------------------------------------------- route_on_perceived


def _pm(edges: list[tuple[str, str, tuple[str, ...]]]) -> PerceivedMap:
    names = sorted({n for a, b, _ in edges for n in (a, b)})
    stations = {n: PerceivedStation(n, float(i), 0.0, False, ()) for i, n in enumerate(names)}
    return PerceivedMap(stations=stations, edges=edges)


R, B, G = "#ff0000", "#0000ff", "#00ff00"


def test_route_follows_fewest_stations_and_marks_colour_changes():
    pm = _pm(
        [
            ("Alder", "Beacon", (R,)),
            ("Beacon", "Cosmo", (R,)),
            ("Cosmo", "Dunmore", (R,)),
            ("Cosmo", "Elmira", (B,)),
            ("Elmira", "Fenwick", (B,)),
        ]
    )
    assert route_on_perceived(pm, "Alder", "Dunmore") == "Alder-Beacon-Cosmo-Dunmore"
    assert route_on_perceived(pm, "Alder", "Fenwick") == "Alder-Beacon-Cosmo(transfer)-Elmira-Fenwick"
    assert route_on_perceived(pm, "Fenwick", "Beacon") == "Fenwick-Elmira-Cosmo(transfer)-Beacon"


def test_route_prefers_fewer_stations_over_fewer_transfers():
    # Alder to Dunmore: 3 stations with a change at Beacon, or 5 stations on red only.
    pm = _pm(
        [
            ("Alder", "Beacon", (R,)),
            ("Beacon", "Dunmore", (B,)),
            ("Alder", "Xeno", (R,)),
            ("Xeno", "Yarrow", (R,)),
            ("Yarrow", "Zinnia", (R,)),
            ("Zinnia", "Dunmore", (R,)),
        ]
    )
    assert route_on_perceived(pm, "Alder", "Dunmore") == "Alder-Beacon(transfer)-Dunmore"


def test_route_prefers_fewer_transfers_among_equally_short_routes():
    pm = _pm(
        [
            ("Alder", "Beacon", (R,)),
            ("Beacon", "Dunmore", (B,)),
            ("Alder", "Cosmo", (G,)),
            ("Cosmo", "Dunmore", (G,)),
        ]
    )
    assert route_on_perceived(pm, "Alder", "Dunmore") == "Alder-Cosmo-Dunmore"


def test_shared_track_does_not_force_a_transfer():
    # Cosmo-Dunmore carries both colours: Alder..Elmira stays on red throughout.
    pm = _pm(
        [
            ("Alder", "Cosmo", (R,)),
            ("Cosmo", "Dunmore", (R, B)),
            ("Dunmore", "Elmira", (R,)),
            ("Dunmore", "Fenwick", (B,)),
        ]
    )
    assert route_on_perceived(pm, "Alder", "Elmira") == "Alder-Cosmo-Dunmore-Elmira"
    # Alder..Fenwick needs exactly one change, at Cosmo or at Dunmore.
    answer = route_on_perceived(pm, "Alder", "Fenwick")
    assert answer in ("Alder-Cosmo(transfer)-Dunmore-Fenwick", "Alder-Cosmo-Dunmore(transfer)-Fenwick")


def test_route_uses_question_spelling_for_endpoints_and_ocr_spelling_inside():
    pm = _pm([("MapleGrove", "Cedar HiII", (R,)), ("Cedar HiII", "Kingsbrldge", (R,))])
    assert route_on_perceived(pm, "Maple Grove", "Kingsbridge") == "Maple Grove-Cedar HiII-Kingsbridge"


def test_route_from_a_station_to_itself_is_that_station():
    pm = _pm([("Alder", "Beacon", (R,))])
    assert route_on_perceived(pm, "alder", "alder") == "alder"


def test_perceived_positions_are_in_input_image_pixels(maps):
    m = maps["generated_1"]
    pm = read_map_image(render_map(m, scale=0.5), ocr=OracleOcr(m, scale=0.5))
    assert len(pm.stations) == len(m.stations)
    for name, st in pm.stations.items():
        true = m.stations[name]
        assert math.hypot(st.x - true.x / 2, st.y - true.y / 2) < 2, name


def test_route_is_none_for_unreadable_endpoint_or_no_path():
    pm = _pm([("Alder", "Beacon", (R,)), ("Cosmo", "Dunmore", (B,))])
    assert route_on_perceived(pm, "Alder", "Quintessential") is None
    assert route_on_perceived(pm, "Alder", "Dunmore") is None
    assert route_on_perceived(PerceivedMap(stations={}, edges=[]), "Alder", "Beacon") is None


def test_name_matching_takes_the_best_match_above_one_half():
    names = ["Kingsbridge", "Kingston", "?3"]
    assert match_station_name("kingsbrige", names) == "Kingsbridge"
    assert match_station_name("  KINGSTON ", names) == "Kingston"
    assert match_station_name("Harbor Point", names) is None


# --------------------------------------------------------------------------- read_map_image


class OracleOcr:
    """Stands in for RapidOCR with perfect reading: it returns the renderer's own label
    boxes, so these tests exercise the geometry (markers, lines, edges, attachment)."""

    def __init__(self, m: MetroMap, scale: float = 1.0):
        # The reader works on an image enlarged to at least 1600 px by a power of two.
        k = 1
        while max(m.width, m.height) * scale * k < 1600:
            k *= 2
        f = scale * k
        self.items = [
            [[[l * f, t * f], [r * f, t * f], [r * f, b * f], [l * f, b * f]], name, 0.99]
            for name, (l, t, r, b) in compute_layout(m).labels.items()
        ]
        self.calls = 0

    def __call__(self, image, **kwargs):
        self.calls += 1
        return self.items, [0.0, 0.0, 0.0]


class BlindOcr:
    def __call__(self, image, **kwargs):
        return None, None


@pytest.mark.parametrize("key", sorted(MAPS))
def test_graph_is_recovered_from_pixels_at_full_size(maps, key):
    m = maps[key]
    ocr = OracleOcr(m)
    pm = read_map_image(render_map(m), ocr=ocr)
    assert ocr.calls == 1
    assert set(pm.stations) == set(m.stations)
    for name, st in pm.stations.items():
        true = m.stations[name]
        assert math.hypot(st.x - true.x, st.y - true.y) < 4, name
        assert st.is_transfer == true.is_transfer, name
    colour_of = {ln.name: ln.color.lower() for ln in m.lines.values()}

    def close(c1: str, c2: str) -> bool:
        return all(abs(int(c1[i : i + 2], 16) - int(c2[i : i + 2], 16)) <= 24 for i in (1, 3, 5))

    seen = set()
    for a, b, colours in pm.edges:
        e = m.edge_between(a, b)
        assert e is not None, (a, b)
        assert len(colours) == len(e.lines) and all(any(close(c, colour_of[ln]) for c in colours) for ln in e.lines), (
            a,
            b,
            colours,
            e.lines,
        )
        seen.add(frozenset((a, b)))
    assert seen == {frozenset((e.a, e.b)) for e in m.edges}
    assert len(pm.line_colors) == len(m.lines)


def test_names_come_only_from_reading_the_image(maps):
    """With an OCR that reads nothing, the markers and edges are still seen but no station
    has a name, so no question can be answered."""
    m = maps["hand_built"]
    pm = read_map_image(render_map(m), ocr=BlindOcr())
    assert len(pm.stations) == len(m.stations)
    assert all(name.startswith("?") for name in pm.stations)
    assert len(pm.edges) == len(m.edges)
    s, t = sample_pairs(m, 1)[0]
    assert route_on_perceived(pm, s, t) is None


def test_tiny_and_blank_images_read_as_empty_maps():
    from PIL import Image

    for img in (Image.new("RGB", (1, 1), "white"), Image.new("L", (300, 200), 255), Image.new("RGBA", (40, 30))):
        pm = read_map_image(img, ocr=BlindOcr())
        assert pm.stations == {} and pm.edges == []
        assert (pm.width, pm.height) == img.size


class CountingOcr:
    """Reads nothing, and counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, image, **kwargs):
        self.calls += 1
        return [], None


def test_ocr_runs_only_when_there_is_a_marker_to_name(maps):
    """A label only names a marker: an image with none is read without OCR (most of a
    reading's cost), and reads exactly as it would with it (no station, no edge)."""
    from PIL import Image

    counting = CountingOcr()
    blank = read_map_image(Image.new("RGB", (400, 300), "white"), ocr=counting)
    assert counting.calls == 0 and blank.stations == {} and blank.texts == []
    tiny = read_map_image(render_map(maps["hand_built"], scale=1 / 32), ocr=counting)
    assert counting.calls == 0 and tiny.stations == {} and tiny.edges == []
    read_map_image(render_map(maps["hand_built"]), ocr=counting)
    assert counting.calls == 1  # markers found: their labels are read


def test_ocr_engine_is_created_once():
    assert get_ocr_engine() is get_ocr_engine()


@pytest.mark.slow
def test_routes_read_at_full_size_are_mostly_right(maps):
    acc = accuracy(maps, 1.0)
    assert acc >= 0.8, acc


@pytest.mark.slow
def test_routes_read_at_half_size_are_mostly_right(maps):
    """Labels are ~12 px tall at 1/2 and still readable."""
    acc = accuracy(maps, 0.5)
    assert acc >= 0.6, acc


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1 / 8, 1 / 32])
def test_routes_cannot_be_read_once_labels_are_illegible(maps, scale):
    acc = accuracy(maps, scale)
    assert acc <= 0.2, acc


@pytest.mark.slow
def test_a_full_size_map_is_read_whole(maps):
    # how long a reading takes is measured by bench/profile_main.py (its calibration), never here
    pm, _ = perceived(maps, "generated_3", 1.0)
    assert (pm.width, pm.height) == (2000, 1600)
    assert pm.stations and pm.ocr_seconds >= 0.0
