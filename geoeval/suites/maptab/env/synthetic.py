"""A synthetic MapTab environment's maps and their difficulty: Metromaps and Travelmaps generated
from the seed (appendix E.1), checked (B.5), and levelled Easy / Medium / Hard within each
scenario (appendix C.2)."""

from __future__ import annotations

from typing import Any

from geoeval.api import GeoevalError


def generate_env_maps(env_cfg: Any, seed: int, scenario: str) -> list[Any]:
    from geoeval.suites.maptab.generator.checks import run_quality_checks
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.generator.travel import generate_travel_map

    maps = []
    for i in range(env_cfg.n_maps):
        if scenario == "metromap":
            m = generate_metro_map(
                seed * 1000 + i,
                n_lines=env_cfg.n_lines,
                stations_per_line=tuple(env_cfg.stations_per_line),
                width=env_cfg.width,
                height=env_cfg.height,
                loop_probability=env_cfg.loop_probability,
                name=f"metro{seed:03d}_{i:03d}",
            )
        else:  # Travelmap at its own E.1 defaults (the env's size and line options are Metromap's)
            m = generate_travel_map(seed * 1000 + 500 + i, name=f"travel{seed:03d}_{i:03d}")
        problems = run_quality_checks(m)
        if problems:
            raise GeoevalError(f"generated map {m.name} failed quality checks: {problems}")
        maps.append(m)
    return maps


def maps_difficulty(maps: list[Any], scenario: str) -> dict[str, dict[str, Any]]:
    """Map difficulty (appendix C.2) within one scenario's maps of the environment: Metromap by GS and
    WASP, Travelmap by GS, WASP and MC, each min-max normalised, averaged, then split 1:1:1."""
    from geoeval.suites.maptab.generator.difficulty import gs, map_difficulty_score, mc, tercile_levels, wasp

    raw = {m.name: {"gs": gs(m), "wasp": wasp(m), "mc": mc(m)} for m in maps}
    if scenario == "metromap":
        levels = _map_levels(raw, tercile_levels)
    else:
        levels = dict(zip([m.name for m in maps], tercile_levels(map_difficulty_score(maps, scenario))))
    return {n: {**raw[n], "level": levels[n]} for n in raw}


def _map_levels(raw: dict[str, dict[str, float]], tercile_levels) -> dict[str, str]:
    names = sorted(raw)

    def norm(key: str) -> list[float]:
        vals = [raw[n][key] for n in names]
        lo, hi = min(vals), max(vals)
        return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in vals]

    score = [(a + b) / 2 for a, b in zip(norm("gs"), norm("wasp"))]
    return dict(zip(names, tercile_levels(score)))
