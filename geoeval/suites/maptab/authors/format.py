"""Reading and writing the MapTab release layout, so that geoeval runs on the authors' data and
writes its generated maps in the same shape.

Layout under a root (one folder per scenario):
    <scenario>/images/<country>/<name>.png
    <scenario>/tabulars/<country>/<name>_edge.{csv,json}
    <scenario>/tabulars/<country>/<name>_vertex.{csv,json}
    <scenario>/tabulars/<country>/<name>_vertex2.{csv,json}     (Mix_tab; geoeval writes it, the
                                                                  public sample lacks it)
    <scenario>/data/test_set/<scenario>_shortest_path_query_<suffix>_test_set.json

Test-set items carry: country, city (Travelmap: scenic_spot), figure, edge_tab (not for the Mix_tab
category), vertex_tab, station_1 / station_2 (Travelmap: spot_1 / spot_2), Map_Difficulty,
Query_Difficulty, question, routes, route_vertex_numbers, transfer_vertex_numbers (Metromap only),
and for criteria items weights [time, price, comfort, reliability] plus Total_Time, Total_Price,
Average_Comfort Level, Average_Reliability. Paths inside items are relative to the root, as in the
authors' files. Written CSV files carry a UTF-8 BOM like the authors'.
Writing appends to an existing test-set file, replacing earlier items of the same map, so several
maps can share one root.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import (
    edge_table,
    format_table,
    map_from_rows,
    mix_table,
    parse_table,
    vertex_table,
)
from geoeval.suites.maptab.graph import MetroMap, Scenario

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image

    from geoeval.suites.maptab.rp.queries import RPQuery

# geoeval category -> the authors' test-set file suffix
CATEGORY_SUFFIX: dict[str, str] = {
    "map_only": "only_map",
    "edge_only": "only_tab",
    "map_edge": "map_and_tab",
    "T": "map_and_tab_with_constraint_1",
    "P": "map_and_tab_with_constraint_2",
    "C": "map_and_tab_with_constraint_3",
    "R": "map_and_tab_with_constraint_4",
    "TPR": "map_and_tab_with_constraint_1_2_4",
    "TCR": "map_and_tab_with_constraint_1_3_4",
    "PCR": "map_and_tab_with_constraint_2_3_4",
    "TPCR": "map_and_tab_with_constraint_1_2_3_4",
    "mix": "map_and_tab_with_constraint_1_2_3_4_only_vertex2",
}
SUFFIX_CATEGORY = {v: k for k, v in CATEGORY_SUFFIX.items()}
TOTAL_KEYS = ("Total_Time", "Total_Price", "Average_Comfort Level", "Average_Reliability")


def _keys(scenario: Scenario) -> tuple[str, str, str]:
    """(map key, source key, destination key) of test-set items."""
    return ("city", "station_1", "station_2") if scenario == "metromap" else ("scenic_spot", "spot_1", "spot_2")


def scenario_of_item(item: dict[str, Any]) -> Scenario | None:
    """The scenario of a test-set item, from its keys (Metromap: city / station_1 / station_2;
    Travelmap: scenic_spot / spot_1 / spot_2); None when the keys say neither or both."""
    metro = any(k in item for k in _keys("metromap"))
    travel = any(k in item for k in _keys("travelmap"))
    if metro == travel:
        return None
    return "metromap" if metro else "travelmap"


def item_keys(scenario: Scenario) -> tuple[str, str, str]:
    """(map key, source key, destination key) of a scenario's test-set items."""
    return _keys(scenario)


def rp_test_set_path(root: Path, scenario: Scenario, category: str) -> Path:
    return (
        Path(root)
        / scenario
        / "data"
        / "test_set"
        / (f"{scenario}_shortest_path_query_{CATEGORY_SUFFIX[category]}_test_set.json")
    )


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")


def load_table_file(path: Path) -> list[dict[str, Any]]:
    """Rows of one table file (.json or .csv)."""
    fmt = "json" if path.suffix.lower() == ".json" else "csv"
    return parse_table(_read_text(path), fmt)  # type: ignore[arg-type]


def _find_table(folder: Path, stem: str) -> Path | None:
    for ext in (".json", ".csv"):
        p = folder / f"{stem}{ext}"
        if p.is_file():
            return p
    return None


def authors_table_path(root: Path, scenario: Scenario, region: str, city: str, kind: str) -> Path | None:
    """The file of one of a map's tables (`kind` "edge", "vertex" or "vertex2"), .json preferred
    over .csv, or None."""
    return _find_table(Path(root) / scenario / "tabulars" / region, f"{city}_{kind}")


def load_authors_map(root: Path, scenario: Scenario, region: str, city: str) -> MetroMap:
    """A `MetroMap` from `<root>/<scenario>/tabulars/<region>/<city>_{edge,vertex}.json` (or .csv).
    Coordinates are 0 (the tables carry no layout); width/height come from the map image if present."""
    folder = Path(root) / scenario / "tabulars" / region
    edge_path = _find_table(folder, f"{city}_edge")
    vertex_path = _find_table(folder, f"{city}_vertex")
    if edge_path is None or vertex_path is None:
        raise GeoevalError(f"no {city}_edge / {city}_vertex table (.json or .csv) under {folder}")
    m = map_from_rows(
        load_table_file(edge_path), load_table_file(vertex_path), None, scenario, name=city, country=region
    )
    image = Path(root) / scenario / "images" / region / f"{city}.png"
    if image.is_file():
        from PIL import Image

        with Image.open(image) as im:
            m.width, m.height = im.size
    return m


def load_test_set(path: Path) -> list[dict[str, Any]]:
    """The items of one test-set JSON file (a list of objects)."""
    data = json.loads(_read_text(Path(path)))
    if not isinstance(data, list):
        raise GeoevalError(f"{path} is not a JSON list of test items")
    return data


def category_of_test_set(path: Path) -> str:
    """The geoeval category of an authors' test-set file name."""
    name = Path(path).name
    for scenario in ("metromap", "travelmap"):
        prefix = f"{scenario}_shortest_path_query_"
        if name.startswith(prefix) and name.endswith("_test_set.json"):
            suffix = name[len(prefix) : -len("_test_set.json")]
            if suffix in SUFFIX_CATEGORY:
                return SUFFIX_CATEGORY[suffix]
    raise GeoevalError(f"{name} is not a MapTab RP test-set file name")


def _weight_out(w: float) -> float | int:
    return int(w) if float(w).is_integer() else w


def query_item(q: RPQuery, m: MetroMap) -> dict[str, Any]:
    """One test-set item in the authors' shape."""
    map_key, src_key, dst_key = _keys(q.scenario)
    base = f"{q.scenario}/tabulars/{m.country}/{m.name}"
    item: dict[str, Any] = {
        "country": m.country,
        map_key: m.name,
        "figure": f"{q.scenario}/images/{m.country}/{m.name}.png",
    }
    if q.category == "mix":
        item["vertex_tab"] = f"{base}_vertex2.json"
    else:
        item["edge_tab"] = f"{base}_edge.json"
        item["vertex_tab"] = f"{base}_vertex.json"
    item.update(
        {
            src_key: q.source,
            dst_key: q.target,
            "Map_Difficulty": q.map_difficulty,
            "Query_Difficulty": q.query_difficulty,
            "question": q.question,
            "routes": list(q.routes),
            "route_vertex_numbers": [len(r.split("-")) for r in q.routes],
        }
    )
    if q.scenario == "metromap":
        item["transfer_vertex_numbers"] = list(q.transfer_vertex_numbers)
    if q.weights is not None:
        item["weights"] = [_weight_out(w) for w in q.weights]
        for k in TOTAL_KEYS:
            item[k] = (q.totals or {})[k]
    return item


def write_authors_layout(
    m: MetroMap,
    queries: Iterable[RPQuery],
    root: Path,
    image: Image.Image | None = None,
    *,
    render: bool = True,
) -> list[Path]:
    """Write map `m` (image, tables, Mix_tab as `_vertex2`) and its RP queries under `root` in
    the authors' layout. Returns the paths written.

    The image is `image` when given, else (with `render`) the map drawn at full size by
    `render.image.render_map`, so that the written release is complete; PNG bytes are encoded with
    `render.image.image_to_png_bytes` (fixed settings: equal images give equal files)."""
    root = Path(root)
    scenario = m.scenario
    written: list[Path] = []
    if image is None and render:
        from geoeval.suites.maptab.render.image import render_map

        image = render_map(m)
    if image is not None:
        from geoeval.suites.maptab.render.image import image_to_png_bytes

        p = root / scenario / "images" / m.country / f"{m.name}.png"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(image_to_png_bytes(image))
        written.append(p)
    tab = root / scenario / "tabulars" / m.country
    tab.mkdir(parents=True, exist_ok=True)
    tables = {"edge": edge_table(m), "vertex": vertex_table(m), "vertex2": mix_table(m)}
    for kind, rows in tables.items():
        for fmt in ("csv", "json"):
            p = tab / f"{m.name}_{kind}.{fmt}"
            p.write_text(format_table(rows, fmt), encoding="utf-8-sig" if fmt == "csv" else "utf-8")
            written.append(p)

    by_category: dict[str, list[dict[str, Any]]] = {}
    for q in queries:
        if q.category not in CATEGORY_SUFFIX:
            raise GeoevalError(f"unknown RP category {q.category!r}")
        by_category.setdefault(q.category, []).append(query_item(q, m))
    map_key = _keys(scenario)[0]
    for category, items in by_category.items():
        p = rp_test_set_path(root, scenario, category)
        p.parent.mkdir(parents=True, exist_ok=True)
        existing = load_test_set(p) if p.is_file() else []
        kept = [it for it in existing if not (it.get(map_key) == m.name and it.get("country") == m.country)]
        p.write_text(json.dumps(kept + items, ensure_ascii=False, indent=2), encoding="utf-8")
        written.append(p)
    return written
