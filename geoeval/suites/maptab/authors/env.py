"""The `maptab_authors` environment: the authors' released MapTab files, as they are, turned into
geoeval samples (`env=maptab_authors`, schema `config.MapTabAuthorsEnvConfig`).

What is read, under `root` (the layout of `format.py`):
* per scenario, the RP test-set files `<scenario>/data/test_set/<scenario>_shortest_path_query_<suffix>_test_set.json`
  of the chosen categories (all 12 by default; every one present when `categories` is null);
* for every map the items name (`country` + `city`, Travelmap `scenic_spot`), its tables with
  `format.load_authors_map`, and its image (the item's `figure`, relative to `root`).

What a sample is: one test-set item with the authors' question, source and destination, routes
(every one a reference), weights, totals and Map/Query difficulty; the system prompt is geoeval's
for the category (`rp.prompts.system_prompt`), stating the cost model their labels are optimal under
(`AUTHORS_OBJECTIVE`); the tables are the authors' tables with only the columns the category needs
(`rp.queries.table_columns`), re-serialised in `suite.table_format`; for Map+Mix_tab, the file the
item's `vertex_tab` names when it exists (the full release's `<city>_vertex2.json`), else Mix_tab
derived from Edge_tab and Vertex_tab (`env.tables.mix_table`; the public sample lacks vertex2). The map
image is the authors' PNG, flattened onto white when it has transparency and, for
`suite.resolution` < 1, downscaled with LANCZOS to round(size × resolution), which is exactly what
`render.image.render_map` does to geoeval's own full-size drawings; so a geoeval map written with
`format.write_authors_layout` loads back into the very samples the synthetic environment
builds (tests/maptab/test_authors_env.py).

Sample ids are `<map>-<category>-<i>`, i counting the map's items within the category's file; the
instruction style is recovered when the question is in one of geoeval's D.1 templates, else it is
"unknown". Samples come ordered by map name, then category, then file order.

Bad input: an item that cannot become a sample (missing key, wrong type, unknown difficulty level,
weights that are not 4 non-negative numbers) stops the build with a GeoevalError naming the file,
the item and the key. A map that fails a quality check of appendices B.5/B.6
(`generator.checks.run_quality_checks`), and an item whose endpoints or routes do not fit its map, are
reported instead: printed to stderr on every build and stored in `quality.json` beside the
environment (and in its DuckDB `meta` table under "quality"). `env.on_quality_failure` decides
what happens to them: `exclude` (default) leaves the failing maps and items out of the samples and
records that under "excluded"; `fail` stops before any work. geoeval never silently repairs or
uses them.

The environment folder (`<work_dir>/envs/maptab-authors-<key>/`) is keyed by the config, the
resolved root and the contents of the files read (test sets, tables, images), so edited files are
never served from a stale cache; the run identity leaves out the root (a copied dataset resumes).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from geoeval.api import GeoevalError, file_digest
from geoeval.suites.maptab.authors.format import (
    TOTAL_KEYS,
    authors_table_path,
    item_keys,
    load_authors_map,
    load_table_file,
    load_test_set,
    rp_test_set_path,
    scenario_of_item,
)
from geoeval.suites.maptab.env.environment import (
    MapTabEnv,
    env_key,
    image_data_uri,
    load_maps,
    resolution_tag,
    save_maps,
)
from geoeval.suites.maptab.env.tables import ATTRIBUTE_COLUMNS, format_table, shuffle_rows, split_edge_label
from geoeval.suites.maptab.graph import MetroMap, Scenario
from geoeval.suites.maptab.metrics import DIFFICULTY_SCORES
from geoeval.suites.maptab.routing.cost import SCENARIO_OBJECTIVE, Objective
from geoeval.suites.maptab.routing.transfers import parse_route
from geoeval.suites.maptab.rp.queries import (
    CATEGORIES,
    CRITERIA_FREE,
    RPQuery,
    parse_question,
    prompt_tables,
    row_seed,
    table_columns,
)

SCENARIOS: dict[str, tuple[Scenario, ...]] = {
    "metromap": ("metromap",),
    "travelmap": ("travelmap",),
    "both": ("metromap", "travelmap"),
}

# The cost model under which the authors' labels are optimal, stated in each sample's system
# prompt: every Metromap label of the public sample is optimal under the paper's mean formula
# (and the sum one); the Travelmap Comfort-only and Reliability-only labels only under the
# additive one, which is also what the authors' own Travelmap prompts state ("final route score =
# sum(edge Comfort Level) + sum(vertex Comfort Level)"). See routing's module docstring.
AUTHORS_OBJECTIVE: dict[str, Objective] = dict(SCENARIO_OBJECTIVE)  # one objective for every source

QUALITY_FILE = "quality.json"
ITEMS_FILE = "items.json"


# --------------------------------------------------------------------------------------------
# Reading and checking the test-set items


def _test_set_files(root: Path, scenario: Scenario, categories: list[str] | None) -> list[tuple[str, Path]]:
    """(category, file) of each test set to read, in category order."""
    folder = root / scenario / "data" / "test_set"
    if not folder.is_dir():
        raise GeoevalError(f"env.root: {folder} does not exist (expected the authors' {scenario} test sets there)")
    if categories is not None:
        files = [(c, rp_test_set_path(root, scenario, c)) for c in categories]
        missing = [str(p) for _, p in files if not p.is_file()]
        if missing:
            raise GeoevalError(f"env.categories: no test-set file {', '.join(missing)}")
        return files
    files = [(c, rp_test_set_path(root, scenario, c)) for c in CATEGORIES]
    files = [(c, p) for c, p in files if p.is_file()]
    if not files:
        raise GeoevalError(f"env.root: no MapTab RP test-set file (*_test_set.json) in {folder}")
    return files


def _bad(where: str, what: str) -> GeoevalError:
    return GeoevalError(f"authors' test set {where}: {what}")


def _level(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or value.strip().lower() not in DIFFICULTY_SCORES:
        raise _bad(where, f"{key} must be Easy, Medium or Hard, got {value!r}")
    return value.strip()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def normalise_item(
    raw: Any, scenario: Scenario, category: str, rel_file: str, index: int, root: Path
) -> dict[str, Any]:
    """One test-set item as geoeval uses it, checked; raises GeoevalError naming file, item and key."""
    where = f"{rel_file} item {index}"
    if not isinstance(raw, dict):
        raise _bad(where, f"not a JSON object ({type(raw).__name__})")
    found = scenario_of_item(raw)
    if found is not None and found != scenario:
        raise _bad(where, f"has {found} keys in a {scenario} file")
    map_key, src_key, dst_key = item_keys(scenario)
    for key in ("country", map_key, src_key, dst_key, "question"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _bad(where, f"missing or empty {key!r}")
    routes = raw.get("routes")
    if not isinstance(routes, list) or not routes or not all(isinstance(r, str) and r for r in routes):
        raise _bad(where, f"'routes' must be a non-empty list of route strings, got {routes!r:.80}")
    weights = totals = None
    if category not in CRITERIA_FREE:
        w = raw.get("weights")
        if not (isinstance(w, list) and len(w) == 4 and all(_number(x) and x >= 0 for x in w) and any(w)):
            raise _bad(
                where, f"'weights' must be 4 non-negative numbers [time, price, comfort, reliability], got {w!r}"
            )
        weights = [float(x) for x in w]
        totals = {}
        for key in TOTAL_KEYS:
            if not _number(raw.get(key)):
                raise _bad(where, f"missing or non-numeric {key!r}")
            totals[key] = float(raw[key])
    figure = raw.get("figure") or f"{scenario}/images/{raw['country']}/{raw[map_key]}.png"
    mix_table = ""
    if category == "mix" and isinstance(raw.get("vertex_tab"), str) and (root / raw["vertex_tab"]).is_file():
        mix_table = str((root / raw["vertex_tab"]).resolve())
    return {
        "scenario": scenario,
        "category": category,
        "file": rel_file,
        "index": index,
        "map": raw[map_key].strip(),
        "country": raw["country"].strip(),
        "source": raw[src_key],
        "target": raw[dst_key],
        "question": raw["question"],
        "routes": list(routes),
        "weights": weights,
        "totals": totals,
        "map_difficulty": _level(raw, "Map_Difficulty", where),
        "query_difficulty": _level(raw, "Query_Difficulty", where),
        "figure": str((root / figure).resolve()),
        "mix_table": mix_table,
    }


def load_authors_items(root: Path, scenarios: Iterable[Scenario], categories: list[str] | None) -> list[dict[str, Any]]:
    """Every item of the chosen test sets, normalised (`normalise_item`), in file order."""
    root = Path(root)
    items = []
    for scenario in scenarios:
        for category, path in _test_set_files(root, scenario, categories):
            rel = path.relative_to(root).as_posix()
            try:
                raw_items = load_test_set(path)
            except json.JSONDecodeError as exc:
                raise GeoevalError(f"authors' test set {rel}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
            items += [normalise_item(raw, scenario, category, rel, i, root) for i, raw in enumerate(raw_items)]
    return items


def table_problems(root: Path, scenario: Scenario, country: str, name: str) -> list[str]:
    """Row-level duplicates in a map's Edge_tab and Vertex_tab files, which loading the tables into
    a map would merge away (appendix B.5/B.6 "duplicates"): an edge listed twice on the same line
    (Travelmap: twice at all), one station pair given different attributes on different rows (the
    first row's are used), and a station listed twice (the last row's are used). Rows are counted
    from 1, after the header."""
    problems: list[str] = []
    vertex_path = authors_table_path(root, scenario, country, name, "vertex")
    edge_path = authors_table_path(root, scenario, country, name, "edge")
    vertex_rows = load_table_file(vertex_path) if vertex_path else []
    seen_station: dict[str, int] = {}
    for i, row in enumerate(vertex_rows, 1):
        key = str(row.get("Vertex", "")).strip().lower()
        if key in seen_station:
            problems.append(
                f"{vertex_path.name}: station {row.get('Vertex')!r} is listed on rows "  # type: ignore[union-attr]
                f"{seen_station[key]} and {i} (the later row is used)"
            )
        seen_station.setdefault(key, i)
    known = {str(r.get("Vertex", "")).strip() for r in vertex_rows}
    seen_pair: dict[frozenset[str], tuple[int, tuple]] = {}
    seen_line: dict[tuple[frozenset[str], str], int] = {}
    for i, row in enumerate(load_table_file(edge_path) if edge_path else [], 1):
        pair = frozenset(split_edge_label(str(row.get("Edge", "")), known or None))
        lines = (row.get("Line") or [""]) if scenario == "metromap" else [""]
        for line in lines:
            if (pair, line) in seen_line:
                on = f" on {line!r}" if line else ""
                problems.append(
                    f"{edge_path.name}: edge {row['Edge']!r}{on} repeats row {seen_line[(pair, line)]} "  # type: ignore[union-attr]
                    f"(row {i}): duplicate edge"
                )
            seen_line.setdefault((pair, line), i)
        values = tuple(row.get(c) for c in ATTRIBUTE_COLUMNS)
        if pair in seen_pair and seen_pair[pair][1] != values:
            problems.append(
                f"{edge_path.name}: edge {row['Edge']!r} on row {i} has other attributes than "  # type: ignore[union-attr]
                f"row {seen_pair[pair][0]} (the first row is used)"
            )
        seen_pair.setdefault(pair, (i, values))
    return problems


def item_problems(item: dict[str, Any], m: MetroMap) -> list[str]:
    """Ways an item does not fit its map: unknown endpoints, routes that are not simple paths of the
    map from the source to the destination."""
    problems = []
    for key in ("source", "target"):
        if item[key] not in m.stations:
            problems.append(f"{key} {item[key]!r} is not a station of {m.name}")
    for route in item["routes"]:
        path, _ = parse_route(route)
        if path[0] != item["source"] or path[-1] != item["target"]:
            problems.append(f"route {route!r} does not run from {item['source']!r} to {item['target']!r}")
        elif len(set(path)) != len(path):
            problems.append(f"route {route!r} visits a station twice")
        else:
            gaps = [f"{a}-{b}" for a, b in zip(path, path[1:]) if m.edge_between(a, b) is None]
            if gaps:
                problems.append(f"route {route!r} uses edges the map does not have: {', '.join(gaps)}")
    return problems


# --------------------------------------------------------------------------------------------
# The environment


def _fingerprint(root: Path, items: list[dict[str, Any]], maps: dict[str, tuple[Scenario, str, str]]) -> str:
    h = hashlib.sha256()
    for rel in sorted({it["file"] for it in items}):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    for name, (scenario, country, _) in sorted(maps.items()):
        folder = root / scenario / "tabulars" / country
        for p in sorted(folder.glob(f"{name}_*")):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    for figure in sorted({it["figure"] for it in items} | {it["mix_table"] for it in items if it["mix_table"]}):
        # by content, not modification time: a re-extracted dataset is the same input, an edited image is not
        p = Path(figure)
        shown = p.relative_to(root) if p.is_relative_to(root) else p
        h.update(f"{shown}\0{file_digest(p) if p.is_file() else 'missing'}".encode())
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def build_authors_env(env_cfg: Any, work_dir: Path) -> MapTabEnv:
    """Load, check and store the authors' files (see the module docstring); returns the handle."""
    from geoeval.api import resolve_root
    from geoeval.suites.maptab.generator.checks import run_quality_checks

    # a set root must exist; an unset one reads the verified download cache (`geoeval data fetch`)
    root = resolve_root(env_cfg.root, "maptab-sample").expanduser().resolve()
    items = load_authors_items(root, SCENARIOS[env_cfg.scenario], env_cfg.categories)
    if not items:
        raise GeoevalError(f"env.root: the chosen test-set files under {root} hold no items")

    maps_named: dict[str, tuple[Scenario, str, str]] = {}  # map -> (scenario, country, Map_Difficulty)
    for it in items:
        first = maps_named.setdefault(it["map"], (it["scenario"], it["country"], it["map_difficulty"]))
        if first[:2] != (it["scenario"], it["country"]):
            raise GeoevalError(
                f"authors' test set {it['file']} item {it['index']}: map name {it['map']!r} is used by "
                f"{first[0]}/{first[1]} and {it['scenario']}/{it['country']}; map names must be unique"
            )
    cfg = {**env_cfg.model_dump(mode="json"), "root": str(root)}
    files = _fingerprint(root, items, maps_named)
    key = env_key({**cfg, "files": files}, 0)
    # the scores depend on the files' contents and the config, not on where the files lie
    fingerprint = env_key({**cfg, "root": None, "files": files}, 0)
    folder = Path(work_dir) / "envs" / f"maptab-authors-{key}"
    db = folder / "env.duckdb"
    quality_path = folder / QUALITY_FILE
    if not db.exists():
        folder.mkdir(parents=True, exist_ok=True)
        maps = [load_authors_map(root, sc, country, name) for name, (sc, country, _) in sorted(maps_named.items())]
        by_name = {m.name: m for m in maps}
        # Samples are ordered by map, then category, then file order (the synthetic env's order).
        order = {c: i for i, c in enumerate(env_cfg.categories or CATEGORIES)}
        items.sort(key=lambda it: (it["map"], order[it["category"]], it["index"]))
        quality: dict[str, Any] = {
            "maps": {
                m.name: table_problems(root, *maps_named[m.name][:2], m.name) + run_quality_checks(m) for m in maps
            },
            "items": [
                {"file": it["file"], "index": it["index"], "problem": p}
                for it in items
                for p in item_problems(it, by_name[it["map"]])
            ],
        }
        for name, problem in image_problems(items).items():  # an image the map-based settings cannot read
            quality["maps"].setdefault(name, []).append(problem)
        bad_maps = {name for name, problems in quality["maps"].items() if problems}
        bad_items = {(q["file"], q["index"]) for q in quality["items"]}
        if (bad_maps or bad_items) and env_cfg.on_quality_failure == "fail":
            lines = [f"map {n}: {p}" for n in sorted(bad_maps) for p in quality["maps"][n]]
            lines += [f"{q['file']} item {q['index']}: {q['problem']}" for q in quality["items"]]
            raise GeoevalError(
                "env.on_quality_failure=fail: the authors' files fail quality checks (B.5/B.6):\n  "
                + "\n  ".join(lines[:50])
                + ("\n  ..." if len(lines) > 50 else "")
                + "\nFix the files, or set env.on_quality_failure=exclude to evaluate without them."
            )
        # exclude (the default): a failing map or item is never used, and the exclusion is recorded
        kept = [it for it in items if it["map"] not in bad_maps and (it["file"], it["index"]) not in bad_items]
        if len(kept) < len(items):
            quality["excluded"] = {"maps": sorted(bad_maps), "items": len(items) - len(kept)}
        items = kept
        _write_atomic(quality_path, json.dumps(quality, ensure_ascii=False, indent=2))
        if not items:
            report_quality(quality, quality_path)
            raise GeoevalError(f"env: every authors' item failed the quality checks; see {quality_path}")
        _write_atomic(folder / ITEMS_FILE, json.dumps(items, ensure_ascii=False, indent=1))
        difficulty = {name: {"level": level} for name, (_, _, level) in maps_named.items()}
        save_maps(
            db,
            maps,
            difficulty,
            {"env_key": key, "root": str(root), "quality": json.dumps(quality, ensure_ascii=False)},
        )
    report_quality(json.loads(quality_path.read_text("utf-8")), quality_path)
    return MapTabEnv(
        db_path=str(db.resolve()),
        image_dir=str((folder / "images").resolve()),
        map_names=tuple(sorted(maps_named)),
        map_difficulty={name: level for name, (_, _, level) in maps_named.items()},
        source="authors",
        items_path=str((folder / ITEMS_FILE).resolve()),
        fingerprint=fingerprint,
    )


def report_quality(quality: dict[str, Any], where: Path | None = None) -> int:
    """Print the stored violations to stderr; returns how many there are."""
    lines = [f"map {name}: {p}" for name, problems in quality.get("maps", {}).items() for p in problems]
    lines += [f"{q['file']} item {q['index']}: {q['problem']}" for q in quality.get("items", [])]
    excluded = quality.get("excluded") or {}
    if excluded.get("maps") or excluded.get("items"):
        lines.append(f"excluded from evaluation: maps {excluded.get('maps')}, {excluded.get('items')} item(s)")
    for line in lines:
        print(f"[geoeval] maptab_authors quality: {line}", file=sys.stderr)
    if lines and where is not None:
        print(f"[geoeval] maptab_authors quality: {len(lines)} violation(s), stored in {where}", file=sys.stderr)
    return len(lines)


def quality_report(env: MapTabEnv) -> dict[str, Any]:
    """The stored quality violations of an authors' environment: {"maps": {name: [..]}, "items": [..]}."""
    return json.loads((Path(env.items_path).parent / QUALITY_FILE).read_text("utf-8"))


# --------------------------------------------------------------------------------------------
# Images and samples


def _flat_rgb(img: Any) -> Any:
    """RGB on white: the authors' PNGs may carry transparency (Angkor Wat is RGBA)."""
    from PIL import Image

    if img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return img.convert("RGB")


def image_problems(items: list[dict[str, Any]]) -> dict[str, str]:
    """Per map, why an image its items show cannot be decoded (a truncated or damaged PNG), so
    that `env.on_quality_failure` decides about it as about any other defect of the files. A
    missing image is left to the settings that need it (they name it); table-only settings run
    without images."""
    from PIL import Image

    problems: dict[str, str] = {}
    for figure, name in sorted({(it["figure"], it["map"]) for it in items}):
        if name in problems or not Path(figure).is_file():
            continue
        try:
            with Image.open(figure) as im:
                im.load()  # decodes every byte: a truncated file fails here, not mid-run
        except (OSError, SyntaxError, ValueError) as error:  # PIL's words for a file it cannot decode
            problems[name] = f"image {Path(figure).name} cannot be read ({' '.join(str(error).split())})"
    return problems


def authors_map_image(env: MapTabEnv, figure: str | Path, map_name: str, resolution: float) -> Path:
    """The authors' map image at `resolution` × its size (LANCZOS, as `render.image.render_map` scales),
    made once and cached in the environment's image folder."""
    from PIL import Image

    from geoeval.suites.maptab.render.image import image_to_png_bytes

    path = Path(env.image_dir) / f"{map_name}@{resolution_tag(resolution)}.png"
    if not path.exists():
        figure = Path(figure)
        if not figure.is_file():
            raise GeoevalError(f"map {map_name}: its image {figure} does not exist (needed by the map-based settings)")
        with Image.open(figure) as im:
            img = _flat_rgb(im)
        if resolution < 1:
            size = (max(1, round(img.width * resolution)), max(1, round(img.height * resolution)))
            img = img.resize(size, Image.Resampling.LANCZOS)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(image_to_png_bytes(img))
        os.replace(tmp, path)
    return path


def _style(item: dict[str, Any], known: set[str]) -> int:
    """The D.1 instruction style when the question is one of geoeval's templates for the item's
    category and endpoints, else -1 (the authors' own wording)."""
    try:
        category, style, source, target = parse_question(item["question"], known)
    except GeoevalError:
        return -1
    if (category, source, target) != (item["category"], item["source"], item["target"]):
        return -1
    return style


def authors_query(item: dict[str, Any], m: MetroMap, query_id: str) -> RPQuery:
    """The `RPQuery` an authors' item stands for (its labels as given)."""
    from geoeval.suites.maptab.rp.queries import SETTINGS

    return RPQuery(
        id=query_id,
        map_name=m.name,
        scenario=item["scenario"],
        category=item["category"],
        setting=SETTINGS[item["category"]],
        source=item["source"],
        target=item["target"],
        weights=tuple(item["weights"]) if item["weights"] else None,
        style=_style(item, set(m.stations)),
        question=item["question"],
        routes=list(item["routes"]),
        totals=item["totals"],
        map_difficulty=item["map_difficulty"],
        query_difficulty=item["query_difficulty"],
        spli=0,  # not needed for samples; the authors' files carry no SPLI
        transfer_vertex_numbers=[r.count("(transfer)") for r in item["routes"]],
    )


def authors_tables(item: dict[str, Any], m: MetroMap, table_format: str, row_seed: str | None = None) -> dict[str, str]:
    """The tables of an item's prompt, masked to its category's columns (`rp.queries.table_columns`),
    rows shuffled by `row_seed` (`rp.queries.prompt_tables`) when given."""
    if item["category"] != "mix" or not item["mix_table"]:
        return prompt_tables(m, item["category"], table_format, row_seed=row_seed)  # type: ignore[arg-type]
    columns = table_columns("mix", item["scenario"])["Vertex Table"]
    rows = load_table_file(Path(item["mix_table"]))
    missing = sorted({c for r in rows for c in columns if c not in r} | (set(columns) if not rows else set()))
    if missing:
        raise GeoevalError(f"Mix table {item['mix_table']}: missing column(s) {', '.join(missing)}")
    rows = shuffle_rows([{c: r[c] for c in columns} for r in rows], row_seed, "Vertex Table")
    return {"Vertex Table": format_table(rows, table_format)}  # type: ignore[arg-type]


def authors_samples(suite_cfg: Any, env: MapTabEnv, seed: int = 0) -> list[Any]:
    """The samples of an authors' environment (see the module docstring), filtered by
    `suite.setting`; table rows shuffled per sample with the run `seed` (`suite.row_order`)."""
    from geoeval.suites.maptab.config import SETTING_OF
    from geoeval.suites.maptab.samples import rp_sample

    items = json.loads(Path(env.items_path).read_text("utf-8"))
    kept = [it for it in items if suite_cfg.setting == "all" or SETTING_OF[it["category"]] == suite_cfg.setting]
    if not kept:
        loaded = sorted({it["category"] for it in items})
        raise GeoevalError(
            f"Invalid config: suite.setting={suite_cfg.setting!r} keeps none of the loaded test sets "
            f"(categories {loaded})"
        )
    maps = {m.name: m for m in load_maps(env.db_path)}
    counters: dict[tuple[str, str], int] = {}
    images: dict[str, str] = {}
    samples = []
    for it in kept:
        m = maps[it["map"]]
        i = counters.get((m.name, it["category"]), 0)
        counters[(m.name, it["category"])] = i + 1
        q = authors_query(it, m, f"{m.name}-{it['category']}-{i:03d}")
        image_uri = None
        if SETTING_OF[it["category"]].startswith("map"):
            if m.name not in images:
                images[m.name] = image_data_uri(authors_map_image(env, it["figure"], m.name, suite_cfg.resolution))
            image_uri = images[m.name]
        tables = authors_tables(it, m, suite_cfg.table_format, row_seed(seed, q.id, suite_cfg.row_order))
        samples.append(
            rp_sample(
                q, tables, image_uri, suite_cfg, objective=AUTHORS_OBJECTIVE[it["scenario"]], stations=list(m.stations)
            )
        )
    return samples
