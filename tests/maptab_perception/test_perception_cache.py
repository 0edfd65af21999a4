"""The perception baseline reads each image once: its reading is cached on disk (by the image's
sha256 and the perception code's version), and a warm cache gives exactly the cold run's scores."""

from __future__ import annotations

import dataclasses

import pytest

from geoeval.core.cache import disk as diskcache
from geoeval.core.run.job import run_job
from geoeval.suites.maptab import agents
from geoeval.suites.maptab.perception import reader as perception
from geoeval.suites.maptab.render.image import RENDER_NAMESPACE
from tests.conftest import compose_spec

TINY = (
    "model=perception_baseline",
    "runner=local",
    "env.n_maps=1",
    "suite.scenario=metromap",
    "suite.categories=[map_only,map_edge,T]",
    "suite.n_per_category=3",
    "suite.setting=all",
)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(diskcache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(diskcache.NO_CACHE_ENV, raising=False)
    agents._PERCEIVED.clear()  # the in-process memo would hide the disk
    yield tmp_path / "cache"
    agents._PERCEIVED.clear()


def _run(tmp_path, name):
    spec = compose_spec(tmp_path, *TINY, f"results_db={tmp_path / name}.duckdb", f"log_dir={tmp_path / name}-logs")
    outcome = run_job(spec, progress=False)
    return {
        (r.sample_id, r.epoch): (r.status, r.answer, sorted((k, repr(v)) for k, v in r.scores.items()))
        for r in outcome.results
    }


def _counting_reader(monkeypatch):
    calls = []
    real = perception.read_map_image

    def reader(img, **kw):
        calls.append(img.size)
        return real(img, **kw)

    monkeypatch.setattr(perception, "read_map_image", reader)
    return calls


@pytest.mark.slow
def test_warm_cache_rerun_gives_identical_scores_without_reading_again(tmp_path, cache_dir, monkeypatch):
    calls = _counting_reader(monkeypatch)
    cold = _run(tmp_path, "cold")
    assert len(calls) == 1  # one map image, shown to every sample that has a map
    entries = {u.namespace: u.entries for u in diskcache.usage(cache_dir)}
    # the reading, and the rendered image it was read from (a fresh work dir draws it no more)
    assert entries == {agents.PERCEPTION_NAMESPACE: 1, RENDER_NAMESPACE: 1}

    agents._PERCEIVED.clear()  # a new process: only the disk remembers

    def no_reading(img, **kw):
        raise AssertionError("a warm cache must not read the image again")

    monkeypatch.setattr(perception, "read_map_image", no_reading)
    warm = _run(tmp_path, "warm")
    assert len(cold) == 9 and warm == cold
    # the comparison is of real readings: the full-size map is read well enough to score
    assert any(dict(scores).get("ema") == "1.0" for _s, _a, scores in cold.values())


@pytest.mark.slow
def test_a_changed_perception_version_reads_again(tmp_path, cache_dir, monkeypatch):
    calls = _counting_reader(monkeypatch)
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.render.image import image_to_png_bytes, render_map

    png = image_to_png_bytes(render_map(generate_metro_map(2, n_lines=3), scale=0.25))
    real_version = perception.perception_version()
    first = agents.perceive(png)
    agents._PERCEIVED.clear()
    assert agents.perceive(png) == first and len(calls) == 1  # from disk
    agents._PERCEIVED.clear()
    monkeypatch.setattr(perception, "perception_version", lambda: "v-next")
    again = agents.perceive(png)
    assert len(calls) == 2  # recomputed under the new version (the same reading, another OCR time)
    assert dataclasses.replace(again, ocr_seconds=0.0) == dataclasses.replace(first, ocr_seconds=0.0)
    assert sorted(u.version for u in diskcache.usage(cache_dir)) == sorted(["v-next", real_version])


@pytest.mark.slow
def test_cache_off_reads_every_time(tmp_path, cache_dir, monkeypatch):
    calls = _counting_reader(monkeypatch)
    monkeypatch.setenv(diskcache.NO_CACHE_ENV, "1")
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.render.image import image_to_png_bytes, render_map

    png = image_to_png_bytes(render_map(generate_metro_map(3, n_lines=3), scale=0.25))
    agents.perceive(png)
    agents._PERCEIVED.clear()
    agents.perceive(png)
    assert len(calls) == 2 and diskcache.usage(cache_dir) == []


def test_version_depends_on_the_source_and_the_constant(monkeypatch):
    v = perception.perception_version()
    assert v.startswith(f"v{perception.PERCEPTION_VERSION}-")
    monkeypatch.setattr(perception, "_VERSION_CACHE", [])
    monkeypatch.setattr(perception, "PERCEPTION_VERSION", perception.PERCEPTION_VERSION + 1)
    assert perception.perception_version() != v


def test_the_perception_version_is_part_of_the_baselines_run_identity(tmp_path):
    """A new reader is a new run: a rerun never resumes from, or is compared as, the old
    reader's answers. Other agents' run identities do not carry it."""
    from geoeval.core.registry import get_suite
    from geoeval.suites.maptab.perception.reader import PERCEPTION_VERSION
    from tests.conftest import compose_spec

    assert get_suite("maptab").agent_versions["perception_baseline"] == f"perception-{PERCEPTION_VERSION}"
    perceiving = compose_spec(tmp_path, "model=perception_baseline")
    assert perceiving.identity()["model"]["agent_version"] == f"perception-{PERCEPTION_VERSION}"
    assert "agent_version" not in compose_spec(tmp_path, "model=table_baseline").identity()["model"]
    assert "agent_version" not in compose_spec(tmp_path, "model=openai_api").identity()["model"]
