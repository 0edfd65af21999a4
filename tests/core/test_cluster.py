"""The pieces a shard on another node relies on: the environment's files travel and land in a
node-local copy; logs come back as bytes; the code digest tells two installs apart."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.core.run import cluster


@dataclasses.dataclass(frozen=True)
class Env:
    db_path: str
    image_dir: str
    seed: int = 0
    label: str = "not a path"


def test_a_node_without_the_drivers_files_gets_its_own_copy(tmp_path, monkeypatch):
    (tmp_path / "driver" / "images").mkdir(parents=True)
    (tmp_path / "driver" / "env.duckdb").write_bytes(b"city")
    (tmp_path / "driver" / "images" / "m0.png").write_bytes(b"png")
    env = Env(db_path=str(tmp_path / "driver" / "env.duckdb"), image_dir=str(tmp_path / "driver" / "images"))
    packed = cluster.pack_env(env)
    monkeypatch.setenv("GEOEVAL_NODE_CACHE", str(tmp_path / "node"))
    # on the driver's own node nothing moves
    assert cluster.localize_env(env, [packed]) is env
    # a node that cannot see the driver's folder unpacks the files and points the handle at them
    (tmp_path / "driver").rename(tmp_path / "gone")
    local = cluster.localize_env(env, [packed])
    assert Path(local.db_path).read_bytes() == b"city"
    assert (Path(local.image_dir) / "m0.png").read_bytes() == b"png"
    assert str(tmp_path / "node") in local.db_path and local.seed == 0 and local.label == "not a path"
    # a second shard on that node reuses the copy
    assert cluster.localize_env(env, [packed]) == local


def test_logs_from_another_node_are_written_into_the_run_folder(tmp_path):
    items = [
        {"path": str(tmp_path / "elsewhere" / "a.eval"), "data": b"zip"},
        {"path": str(tmp_path / "here.eval"), "data": None},
    ]
    (tmp_path / "here.eval").write_bytes(b"local")
    paths = cluster.receive_logs(items, tmp_path / "logs")
    assert paths == [str(tmp_path / "logs" / "a.eval"), str(tmp_path / "here.eval")]
    assert Path(paths[0]).read_bytes() == b"zip"


def test_other_code_is_refused_with_one_clear_error():
    cluster.check_code(cluster.code_digest())
    with pytest.raises(GeoevalError, match="install the driver's geoeval on every node"):
        cluster.check_code("0.0.1+000000000000")


def _entry(root, name, size, used_at):
    import os

    entry = root / name
    (entry / "env").mkdir(parents=True)
    (entry / "env" / "data.bin").write_bytes(b"x" * size)
    (entry / ".complete").write_text("ok")
    os.utime(entry / ".complete", (used_at, used_at))
    return entry


def test_the_node_cache_evicts_least_recently_used_entries_not_in_use(tmp_path):
    from geoeval.core.run.cluster import IN_USE_GRACE_S, evict_node_cache

    now = 1_000_000.0
    old = now - 10 * IN_USE_GRACE_S
    oldest = _entry(tmp_path, "aaaa", 400, old - 100)
    older = _entry(tmp_path, "bbbb", 400, old)
    recent = _entry(tmp_path, "cccc", 400, now - 60)  # in use within the grace period
    current = _entry(tmp_path, "dddd", 400, old - 500)  # the one this shard just unpacked
    abandoned = tmp_path / ".unpack-zzz"
    abandoned.mkdir()
    import os

    os.utime(abandoned, (old, old))
    removed = evict_node_cache(tmp_path, keep=current, max_bytes=900, now=now)
    # 1600 bytes > 900: drop the least recently used that are neither kept nor recent, until it fits
    assert removed == [".unpack-zzz", "aaaa", "bbbb"]
    assert not oldest.exists() and not older.exists() and recent.exists() and current.exists()
    assert evict_node_cache(tmp_path, keep=current, max_bytes=900, now=now) == []  # nothing left to evict


def test_installed_entry_point_plugins_are_shipped_and_found_by_a_worker_without_metadata(monkeypatch):
    from geoeval.core import errors, registry
    from geoeval.core.run.cluster import shipped_env_vars, shipped_modules

    modules = shipped_env_vars()[registry.SHIPPED_ENTRY_POINTS_ENV].split(",")
    assert modules[0].startswith("geoeval.") and "geoeval_example_plugins" in modules  # built-ins first
    assert any(folder.endswith("geoeval_example_plugins") for folder in shipped_modules())
    # a worker running shipped code has no entry-point metadata: it imports the driver's modules
    monkeypatch.setattr(registry, "_REG", registry._Registry())
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    imported = []
    monkeypatch.setattr(registry.importlib, "import_module", lambda name: imported.append(name))
    monkeypatch.setenv(registry.SHIPPED_ENTRY_POINTS_ENV, ",".join(modules))
    registry.load_plugins()
    assert imported == modules and registry._REG.loaded
    monkeypatch.setattr(registry, "_REG", registry._Registry())
    monkeypatch.delenv(registry.SHIPPED_ENTRY_POINTS_ENV)
    import pytest

    with pytest.raises(errors.GeoevalError, match="built-in suites are not registered"):
        registry.load_plugins()


def test_inside_a_ray_job_the_driver_does_not_set_again_what_the_jobs_runtime_env_sets(monkeypatch):
    from geoeval.core.run.ray_session import RAY_JOB_CONFIG_ENV, without_job_runtime_env

    ours = {"env_vars": {"GEOEVAL_ROOT": "/shared", "GEOEVAL_CACHE_DIR": "/c"}, "py_modules": ["/m"]}
    monkeypatch.delenv(RAY_JOB_CONFIG_ENV, raising=False)
    assert without_job_runtime_env(ours) == ours  # not in a job: as it is
    job = {"runtime_env": {"env_vars": {"GEOEVAL_ROOT": "/shared"}}, "metadata": {}}
    monkeypatch.setenv(RAY_JOB_CONFIG_ENV, json.dumps(job))
    assert without_job_runtime_env(ours) == {"env_vars": {"GEOEVAL_CACHE_DIR": "/c"}, "py_modules": ["/m"]}
    job["runtime_env"]["py_modules"] = ["/theirs"]
    monkeypatch.setenv(RAY_JOB_CONFIG_ENV, json.dumps(job))
    assert without_job_runtime_env(ours) == {"env_vars": {"GEOEVAL_CACHE_DIR": "/c"}}
    assert without_job_runtime_env({"env_vars": {"GEOEVAL_ROOT": "/shared"}}) is None


def test_a_ray_job_without_a_root_is_told_where_its_results_really_go(tmp_path, monkeypatch):
    """Without `GEOEVAL_ROOT` a Ray job writes under its driver's working directory: the folder
    the Ray head was started from (no --working-dir), or Ray's temporary copy of --working-dir;
    the warning names the one it is, with the resolved path."""
    from geoeval.core.run.ray_session import RAY_JOB_CONFIG_ENV, job_without_root_warning

    monkeypatch.delenv("GEOEVAL_ROOT", raising=False)
    monkeypatch.delenv(RAY_JOB_CONFIG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert job_without_root_warning("results/geoeval.duckdb") is None  # not a Ray job
    monkeypatch.setenv(RAY_JOB_CONFIG_ENV, "{}")
    said = job_without_root_warning("results/geoeval.duckdb")
    assert said is not None and str(tmp_path.resolve() / "results" / "geoeval.duckdb") in said
    assert "the directory the Ray head was started from" in said and "temporary" not in said
    copy = tmp_path / "session_1" / "runtime_resources" / "working_dir_files" / "_ray_pkg_1"
    copy.mkdir(parents=True)
    monkeypatch.chdir(copy)
    assert "Ray's temporary copy" in (job_without_root_warning("results/geoeval.duckdb") or "")
    monkeypatch.setenv("GEOEVAL_ROOT", str(tmp_path / "shared"))
    assert job_without_root_warning("results/geoeval.duckdb") is None
