"""The pieces a shard on another node relies on: the environment's files travel and land in a
node-local copy; logs come back as bytes; the code digest tells two installs apart."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from geoeval.core import cluster
from geoeval.core.errors import GeoevalError


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
    items = [{"path": str(tmp_path / "elsewhere" / "a.eval"), "data": b"zip"},
             {"path": str(tmp_path / "here.eval"), "data": None}]
    (tmp_path / "here.eval").write_bytes(b"local")
    paths = cluster.receive_logs(items, tmp_path / "logs")
    assert paths == [str(tmp_path / "logs" / "a.eval"), str(tmp_path / "here.eval")]
    assert Path(paths[0]).read_bytes() == b"zip"


def test_other_code_is_refused_with_one_clear_error():
    cluster.check_code(cluster.code_digest())
    with pytest.raises(GeoevalError, match="install the driver's geoeval on every node"):
        cluster.check_code("0.0.1+000000000000")
