"""`env=maptab_real`: Metromaps with real station names and line topology (Tokyo Metro + Toei from
the `tokyo-train-board` package, or any GTFS feed) and synthetic E.1 attributes.

`env.n_maps` maps share the topology and layout and differ in their attributes (map i draws them
from seed `env.seed` (or the run's seed) * 1000 + i). Queries are drawn per run exactly as on
synthetic maps (`suite.categories`, `suite.n_per_category`, `suite.style`, ...).

Quality: every map goes through the B.5 checks (`generator.checks.run_quality_checks`), the E.1 range
checks and the layout spacing checks; any violation stops the build (they would be geoeval's bugs,
the input only fixes names and topology). Two properties of real networks are reported, not
fatal, in `quality.json` beside the environment (and the DuckDB `meta` table): lines crossing away
from a station, and pairs of station names the authors' scorer cannot tell apart (difflib ratio
>= 0.5, e.g. "Shinjuku" / "Shinjuku Sanchome": a model naming one where the other is expected is
still counted right, as it would be on the authors' own city maps).

Caching: the folder is keyed by the config, the seed and a fingerprint of the input (the GTFS
files' contents, or the package's bundled line files), so an edited feed rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.environment import MapTabEnv, env_key, load_maps, map_levels, save_maps
from geoeval.suites.maptab.metrics import similarity

QUALITY_FILE = "quality.json"
NAME_SIMILARITY_LIMIT = 0.5


def source_lines(env_cfg: Any) -> tuple[list, str]:
    """The configured source's lines and a fingerprint of the input files."""
    from geoeval.suites.maptab.env.real_topology import TOKYO_PACKAGE, tokyo_lines

    h = hashlib.sha256()
    if env_cfg.source == "tokyo":
        lines = tokyo_lines(env_cfg.lines)

        data = resources.files(TOKYO_PACKAGE) / "data"
        for f in sorted(data.iterdir(), key=lambda p: p.name):
            if f.name.endswith(".json"):
                h.update(f.name.encode() + b"\0" + f.read_bytes())
        return lines, h.hexdigest()
    from geoeval.suites.maptab.env.gtfs import REQUIRED_FILES, load_gtfs_lines

    if not env_cfg.gtfs_path:
        raise GeoevalError("Invalid config: env.source=gtfs needs env.gtfs_path (a GTFS feed folder)")
    folder = Path(env_cfg.gtfs_path).expanduser().resolve()
    lines = load_gtfs_lines(folder, env_cfg.lines)
    for name in sorted(REQUIRED_FILES):
        h.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return lines, h.hexdigest()


def similar_name_pairs(names: list[str]) -> list[tuple[str, str]]:
    """Pairs the authors' fuzzy station match (ratio >= 0.5 either way) would confuse."""

    names = sorted(names)
    return [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if max(similarity(a, b), similarity(b, a)) >= NAME_SIMILARITY_LIMIT
    ]


def build_real_env(env_cfg: Any, seed: int, work_dir: Path) -> MapTabEnv:
    from geoeval.suites.maptab.env.real_topology import (
        _spacing_problems,
        build_real_map,
        crossing_count,
        reassign_attributes,
    )
    from geoeval.suites.maptab.env.synthetic import maps_difficulty
    from geoeval.suites.maptab.generator.checks import range_violations, run_quality_checks

    lines, fingerprint = source_lines(env_cfg)
    key = env_key({**env_cfg.model_dump(mode="json"), "input": fingerprint}, seed)
    folder = Path(work_dir) / "envs" / f"maptab-real-{key}"
    db = folder / "env.duckdb"
    if not db.exists():
        stem = "tokyo" if env_cfg.source == "tokyo" else Path(env_cfg.gtfs_path).resolve().name
        base = build_real_map(lines, seed * 1000, f"{stem}_00", country=stem)
        # one layout search; the other maps redraw only the attributes
        maps = [base] + [
            reassign_attributes(base, seed * 1000 + i, f"{stem}_{i:02d}") for i in range(1, env_cfg.n_maps)
        ]
        quality: dict[str, Any] = {"maps": {}}
        for m in maps:
            problems = run_quality_checks(m) + range_violations(m) + _spacing_problems(m)
            if problems:
                raise GeoevalError(f"real map {m.name} failed quality checks: {problems[:10]}")
        quality["maps"] = {m.name: [] for m in maps}
        quality["crossings_away_from_stations"] = crossing_count(base)
        quality["similar_station_names"] = [list(p) for p in similar_name_pairs(list(base.stations))]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / QUALITY_FILE).write_text(json.dumps(quality, ensure_ascii=False, indent=2), encoding="utf-8")
        save_maps(
            db,
            maps,
            maps_difficulty(maps, "metromap"),
            {
                "env_key": key,
                "seed": str(seed),
                "input": fingerprint,
                "quality": json.dumps(quality, ensure_ascii=False),
            },
        )
    maps = load_maps(db)
    levels = map_levels(db)
    return MapTabEnv(
        db_path=str(db.resolve()),
        image_dir=str((folder / "images").resolve()),
        map_names=tuple(m.name for m in maps),
        map_difficulty=levels,
        source="real",
        fingerprint=fingerprint,
    )
