"""Tests for the metro-map renderer (`geoeval.suites.maptab.render.image`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from PIL import Image

from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station
from geoeval.suites.maptab.render.image import compute_layout, image_to_png_bytes, render_map
from geoeval.suites.maptab.render.style import INTERCHANGE_RADIUS, LINE_WIDTH, ORDINARY_RADIUS

RED, BLUE, GREEN = "#e32017", "#0072ce", "#00a651"


def _hex(c: str) -> tuple[int, int, int]:
    return tuple(int(c[i : i + 2], 16) for i in (1, 3, 5))


def small_map() -> MetroMap:
    """Three lines on a 1200x900 canvas: Red and Blue share the section Kelvin-Orchard (so
    it is drawn as two parallel strokes), Green is a loop through the interchange Juniper.

        Red:   Ashbury - Kelvin - Orchard - Upton
        Blue:  Dover - Kelvin - Orchard - Zephyr
        Green: Juniper - Falcon - Paddock (loop back to Juniper); Juniper is also on Red
    """
    coords = {
        "Ashbury": (200, 250),
        "Kelvin": (450, 250),
        "Orchard": (700, 250),
        "Upton": (950, 250),
        "Dover": (450, 520),
        "Zephyr": (950, 520),
        "Juniper": (200, 520),
        "Falcon": (200, 760),
        "Paddock": (450, 760),
    }
    lines = {
        "Red Line": (RED, ["Juniper", "Ashbury", "Kelvin", "Orchard", "Upton"], False),
        "Blue Line": (BLUE, ["Dover", "Kelvin", "Orchard", "Zephyr"], False),
        "Green Line": (GREEN, ["Juniper", "Falcon", "Paddock"], True),
    }
    return build_map("small", coords, lines, 1200, 900)


def build_map(name, coords, lines, width, height) -> MetroMap:
    """A MetroMap from station coordinates and {line: (colour, stations, loop)}."""
    on_lines: dict[str, list[str]] = {s: [] for s in coords}
    runs: dict[frozenset, tuple[str, str, list[str]]] = {}
    line_objs = {}
    for ln, (color, seq, loop) in lines.items():
        line_objs[ln] = Line(ln, color, tuple(seq), loop)
        for s in seq:
            on_lines[s].append(ln)
        pairs = list(zip(seq, seq[1:])) + ([(seq[-1], seq[0])] if loop else [])
        for a, b in pairs:
            runs.setdefault(frozenset((a, b)), (a, b, []))[2].append(ln)
    stations = {
        s: Station(s, tuple(on_lines[s]), x, y, 1.0, 0.0, 0.5, 0.9, 5.0 if len(on_lines[s]) > 1 else 0.0)
        for s, (x, y) in coords.items()
    }
    edges = [Edge(a, b, tuple(ls), 2.0, 1.0, 0.5, 0.0) for a, b, ls in runs.values()]
    return MetroMap(name, "metromap", stations, edges, line_objs, width, height)


@pytest.fixture(scope="module")
def m() -> MetroMap:
    return small_map()


@pytest.fixture(scope="module")
def full(m) -> np.ndarray:
    return np.asarray(render_map(m))


def _near_colour(px, color, tol=10) -> bool:
    return all(abs(int(a) - b) <= tol for a, b in zip(px, _hex(color)))


def test_full_size_image_is_map_size_rgb_on_white(m, full):
    assert full.shape == (m.height, m.width, 3)
    assert tuple(full[2, 2]) == (255, 255, 255)


@pytest.mark.parametrize(
    "scale, size",
    [(0.5, (600, 450)), (0.25, (300, 225)), (1 / 8, (150, 112)), (1 / 32, (38, 28)), (1e-5, (1, 1))],
)
def test_scaled_size_is_rounded_and_at_least_one_pixel(m, scale, size):
    assert render_map(m, scale=scale).size == size


def test_downsampled_image_is_lanczos_of_full_size_drawing(m, full):
    """The ablation shrinks the finished full-size picture; it does not redraw smaller."""
    expected = Image.fromarray(full).resize((300, 225), Image.Resampling.LANCZOS)
    assert image_to_png_bytes(render_map(m, scale=0.25)) == image_to_png_bytes(expected)


def test_same_map_and_scale_give_identical_png_bytes(m):
    for scale in (1.0, 0.5):
        assert image_to_png_bytes(render_map(m, scale=scale)) == image_to_png_bytes(render_map(m, scale=scale))
    assert image_to_png_bytes(render_map(m)) != image_to_png_bytes(render_map(m, scale=0.5))


def test_png_bytes_decode_to_the_image(m):
    img = render_map(m, scale=0.5)
    data = image_to_png_bytes(img)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    import io

    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), np.asarray(img))


def test_unsupported_language_is_rejected_naming_allowed_values(m):
    with pytest.raises(ValueError, match="'en'"):
        render_map(m, language="fr")


@pytest.mark.parametrize("scale", [0, -0.5, 1.5])
def test_scale_outside_unit_interval_is_rejected(m, scale):
    with pytest.raises(ValueError, match="scale"):
        render_map(m, scale=scale)


def test_font_path_is_used(m, tmp_path):
    with pytest.raises(OSError):
        render_map(m, font_path=str(tmp_path / "missing.ttf"))


def test_each_single_line_edge_is_stroked_in_its_line_colour(m, full):
    colors = {ln.name: ln.color for ln in m.lines.values()}
    for e in m.edges:
        if len(e.lines) != 1:
            continue
        a, b = m.stations[e.a], m.stations[e.b]
        for t in (0.3, 0.5, 0.7):
            x, y = a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)
            assert _near_colour(full[round(y), round(x)], colors[e.lines[0]]), (e.label, t)


def test_loop_closing_segment_is_drawn(m, full):
    """Green is a loop: Paddock back to Juniper is drawn although only the Line says so."""
    a, b = m.stations["Paddock"], m.stations["Juniper"]
    x, y = (a.x + b.x) / 2, (a.y + b.y) / 2
    assert _near_colour(full[round(y), round(x)], GREEN)


def test_shared_section_is_drawn_as_parallel_strokes(m, full):
    """Kelvin-Orchard carries Red and Blue: across the section both colours appear, side
    by side, within one line width of the centre line."""
    y0 = m.stations["Kelvin"].y
    x = round((m.stations["Kelvin"].x + m.stations["Orchard"].x) / 2)
    column = [tuple(full[round(y0) + dy, x]) for dy in range(-LINE_WIDTH - 2, LINE_WIDTH + 3)]
    reds = [i for i, px in enumerate(column) if _near_colour(px, RED)]
    blues = [i for i, px in enumerate(column) if _near_colour(px, BLUE)]
    assert len(reds) >= LINE_WIDTH - 2 and len(blues) >= LINE_WIDTH - 2
    assert max(reds) < min(blues) or max(blues) < min(reds)  # side by side, not mixed


def _white_radius(img: np.ndarray, x: float, y: float) -> int:
    """How far right of (x, y) the pixels stay white."""
    r = 0
    while img[round(y), round(x) + r + 1].min() >= 250:
        r += 1
    return r


def test_interchanges_are_larger_white_markers_with_thicker_black_outline(m, full):
    interchange = m.stations["Kelvin"]
    ordinary = m.stations["Upton"]
    assert tuple(full[round(interchange.y), round(interchange.x)]) == (255, 255, 255)
    assert tuple(full[round(ordinary.y), round(ordinary.x)]) == (255, 255, 255)
    ri, ro = _white_radius(full, interchange.x, interchange.y), _white_radius(full, ordinary.x, ordinary.y)
    assert ri > ro + 2

    # The outline just beyond the white interior: thick and black vs. thin and dark.
    def outline(st, r):
        run = 0
        while full[round(st.y) - r - 1 - run, round(st.x)].max() <= 60:
            run += 1
        return run

    assert outline(interchange, ri) >= 4
    assert 2 <= outline(ordinary, ro) <= 3
    assert ri + outline(interchange, ri) >= INTERCHANGE_RADIUS - 1
    assert ro + outline(ordinary, ro) <= ORDINARY_RADIUS + 1


def test_layout_marks_exactly_the_multi_line_stations_as_interchanges(m):
    layout = compute_layout(m)
    assert {n for n, mk in layout.markers.items() if mk.interchange} == {"Kelvin", "Orchard", "Juniper"}


def _overlap(a, b, pad=0.0) -> bool:
    return a[0] - pad < b[2] and b[0] - pad < a[2] and a[1] - pad < b[3] and b[1] - pad < a[3]


def _box_gap(box, x, y) -> float:
    dx = max(box[0] - x, 0.0, x - box[2])
    dy = max(box[1] - y, 0.0, y - box[3])
    return math.hypot(dx, dy)


def _segment_box_hit(box, a, b, steps=200) -> bool:
    return any(
        box[0] <= a.x + t / steps * (b.x - a.x) <= box[2] and box[1] <= a.y + t / steps * (b.y - a.y) <= box[3]
        for t in range(steps + 1)
    )


def test_labels_avoid_each_other_markers_strokes_and_legend(m):
    layout = compute_layout(m)
    boxes = layout.labels
    assert set(boxes) == set(m.stations)
    names = sorted(boxes)
    for i, p in enumerate(names):
        for q in names[i + 1 :]:
            assert not _overlap(boxes[p], boxes[q], pad=8), (p, q)
        assert layout.legend is None or not _overlap(boxes[p], layout.legend), p
        for other, mk in layout.markers.items():
            assert _box_gap(boxes[p], mk.x, mk.y) > mk.radius, (p, other)
        for e in m.edges:
            assert not _segment_box_hit(boxes[p], m.stations[e.a], m.stations[e.b]), (p, e.label)


@pytest.mark.parametrize("which", ["small", "generated"])
def test_each_label_is_clearly_nearest_its_own_marker(m, which):
    """A reader attaches a label to the nearest marker, so the renderer must make that the
    right one."""
    if which == "generated":
        from geoeval.suites.maptab.generator.metro import generate_metro_map

        m = generate_metro_map(1, n_lines=4)
    layout = compute_layout(m)
    for name, box in layout.labels.items():
        own = layout.markers[name]
        own_gap = _box_gap(box, own.x, own.y) - own.radius
        for other, mk in layout.markers.items():
            if other != name:
                assert _box_gap(box, mk.x, mk.y) - mk.radius > own_gap + 10, (name, other)


def test_labels_are_dark_text_of_the_planned_size(m, full):
    layout = compute_layout(m)
    for name, (l, t, r, b) in layout.labels.items():
        patch = full[int(t) : int(math.ceil(b)) + 1, int(l) : int(math.ceil(r)) + 1]
        assert (patch.max(axis=2) < 80).sum() > 20, name
        assert 16 <= b - t <= 32  # ~22-26 px type, with ascenders and descenders


def test_legend_lists_each_line_with_its_colour(m, full):
    layout = compute_layout(m)
    assert [row[0] for row in layout.legend_rows] == sorted(m.lines)
    l, t, r, b = (round(v) for v in layout.legend)
    patch = full[t : b + 1, l : r + 1].reshape(-1, 3)
    for ln, color in layout.legend_rows:
        assert color == m.lines[ln].color.lower()
        assert np.all(np.abs(patch.astype(int) - _hex(color)) <= 3, axis=1).sum() >= 200, ln
    # its frame is dark
    assert full[t + 1, (l + r) // 2].max() < 120 and full[(t + b) // 2, l + 1].max() < 120


def test_label_text_becomes_a_blur_at_one_eighth():
    """At 1/8 a 24 px label is ~3 px tall: no pixel in it stays near-black."""
    mm = small_map()
    layout = compute_layout(mm)
    small = np.asarray(render_map(mm, scale=1 / 8))
    dark_in_labels = 0
    for l, t, r, b in layout.labels.values():
        patch = small[int(t / 8) : int(b / 8) + 1, int(l / 8) : int(r / 8) + 1]
        dark_in_labels += int((patch.max(axis=2) < 60).sum())
    full = np.asarray(render_map(mm))
    dark_full = sum(
        int((full[int(t) : int(b) + 1, int(l) : int(r) + 1].max(axis=2) < 60).sum())
        for l, t, r, b in layout.labels.values()
    )
    assert dark_full > 1000 and dark_in_labels < dark_full / 100


def test_a_map_drawn_again_is_the_same_image_whatever_the_caller_did():
    # render_map keeps recent full-size drawings (a resolution sweep asks for each map at every
    # scale); how fast that is, is bench/profile_main.py's business, never a unit test's
    from PIL import ImageDraw

    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.render.image import image_to_png_bytes

    gm = generate_metro_map(3, n_lines=4)
    assert 25 <= len(gm.stations) <= 35
    first = render_map(gm)
    expected = image_to_png_bytes(first)
    ImageDraw.Draw(first).rectangle([0, 0, 500, 500], fill=(0, 0, 0))  # a caller drawing on its copy
    again = render_map(gm)
    assert again.size == (2000, 1600) and image_to_png_bytes(again) == expected
    half = render_map(gm, scale=0.5)
    assert image_to_png_bytes(half) == image_to_png_bytes(again.resize((1000, 800), Image.Resampling.LANCZOS))


def test_generated_map_layout_has_no_label_collisions():
    from geoeval.suites.maptab.generator.metro import generate_metro_map

    gm = generate_metro_map(1, n_lines=4)
    layout = compute_layout(gm)
    names = sorted(layout.labels)
    for i, p in enumerate(names):
        for q in names[i + 1 :]:
            assert not _overlap(layout.labels[p], layout.labels[q]), (p, q)


def test_map_png_is_drawn_once_per_machine_and_follows_the_map_and_scale(m, tmp_path, monkeypatch):
    from geoeval.suites.maptab.render import image as render

    monkeypatch.setenv("GEOEVAL_CACHE_DIR", str(tmp_path / "cache"))
    drawn: list[float] = []
    real = render.render_map

    def counting(mm, **kw):
        drawn.append(kw["scale"])
        return real(mm, **kw)

    monkeypatch.setattr(render, "render_map", counting)
    first = render.map_png(m, scale=0.5)
    assert first == image_to_png_bytes(real(m, scale=0.5)) and drawn == [0.5]
    assert render.map_png(m, scale=0.5) == first and drawn == [0.5]  # read back, not drawn again
    assert render.map_png(m, scale=0.25) != first and drawn == [0.5, 0.25]  # another scale is another drawing
    other = dataclasses.replace(m, name="other")
    render.map_png(other, scale=0.5)
    assert drawn == [0.5, 0.25, 0.5]  # another map too
    monkeypatch.setenv("GEOEVAL_NO_CACHE", "1")
    assert render.map_png(m, scale=0.5) == first and len(drawn) == 4  # cache off: drawn every time
