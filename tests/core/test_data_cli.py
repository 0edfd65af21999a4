"""`geoeval data`: the registry's checksums are the published files', and fetching is verified,
resumable and skips what is already there. Every download comes from a stdlib HTTP server on
127.0.0.1 that serves ../shared/peers (a plain mirror, and a fake Hugging Face Hub API)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from geoeval.cli.data import main
from geoeval.core.data import fetch as datasets
from geoeval.core.data.catalogue import DATASETS
from geoeval.core.data.fetch import FetchError, cache_state, fetch, resolve_root
from geoeval.core.errors import GeoevalError

HUB_PREFIX = "/datasets/szq-nju/MapTab/resolve/main/"
HUB_TREE = "/api/datasets/szq-nju/MapTab/tree/main"
#: The demo copy's empty `ainative_kuake_search.csv` is left out of the registry (see geoeval/core/data/catalogue.py).
NOT_FETCHED = {"mapsatisfy/mock_data/ainative_kuake_search.csv"}


class PeersServer(ThreadingHTTPServer):
    """Serves files under `root` (Range requests honoured), with faults to order: a path in
    `corrupt_once` is served once with a byte flipped; a path in `interrupt` is cut off halfway
    (Content-Length promises the whole file) as many times as its count says."""

    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), PeersHandler)
        self.root = root
        self.corrupt_once: set[str] = set()
        self.interrupt: dict[str, int] = {}
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.hub_page_size = 40

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class PeersHandler(BaseHTTPRequestHandler):
    server: PeersServer

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        self.server.requests.append((path, self.headers.get("Range")))
        if path == HUB_TREE:
            return self._hub_tree(parts.query)
        relative = "maptab/" + path[len(HUB_PREFIX) :] if path.startswith(HUB_PREFIX) else path.lstrip("/")
        file = (self.server.root / relative).resolve()
        if not file.is_file() or self.server.root not in file.parents:
            self.send_error(404)
            return
        data = file.read_bytes()
        if relative in self.server.corrupt_once and data:
            self.server.corrupt_once.discard(relative)
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        range_header = self.headers.get("Range")
        if range_header and range_header.startswith("bytes="):
            start = int(range_header[len("bytes=") :].split("-")[0])
        body = data[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.server.interrupt.get(relative, 0) > 0 and len(body) > 1:
            self.server.interrupt[relative] -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _hub_tree(self, query: str) -> None:
        """The Hub's tree listing of peers/maptab: PNGs as LFS files (sha256), the rest by git
        blob id, in pages linked by `Link: <...>; rel="next"`."""
        folder = self.server.root / "maptab"
        entries = []
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = file.relative_to(folder).as_posix()
            data = file.read_bytes()
            entry = {"type": "file", "path": rel, "size": len(data), "oid": _git_blob_sha1(data)}
            if rel.endswith(".png"):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 130}
            entries.append(entry)
        entries.insert(0, {"type": "directory", "path": "metromap", "size": 0, "oid": "0" * 40})
        start = int(dict(p.split("=") for p in query.split("&") if "=" in p).get("cursor", 0))
        page = entries[start : start + self.server.hub_page_size]
        body = json.dumps(page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if start + self.server.hub_page_size < len(entries):
            nxt = f"{self.server.url}{HUB_TREE}?recursive=true&cursor={start + self.server.hub_page_size}"
            self.send_header("Link", f'<{nxt}>; rel="next"')
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server(peers: Path) -> Iterator[PeersServer]:
    httpd = PeersServer(peers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "data-home"
    monkeypatch.setenv("GEOEVAL_DATA_DIR", str(cache))
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    return cache


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".geoeval-")
    }


def _file_requests(server: PeersServer) -> list[str]:
    return [path for path, _ in server.requests if not path.startswith("/api/")]


# -- the registry ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, folder", [("maptab-sample", "maptab"), ("mapsatisfy-demo", "mapsatisfy")])
def test_registry_checksums_are_those_of_the_published_files(peers: Path, name: str, folder: str) -> None:
    files = DATASETS[name].files
    for expected in files:
        data = (peers / folder / expected.path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (expected.size, expected.sha256), expected.path
    on_disk = {p.relative_to(peers).as_posix() for p in (peers / folder).rglob("*") if p.is_file()}
    listed = {f"{folder}/{f.path}" for f in files}
    assert on_disk - listed == NOT_FETCHED & on_disk
    assert listed <= on_disk


def test_registry_points_at_the_authors_pinned_repositories() -> None:
    sample = {f.path: f.url for f in DATASETS["maptab-sample"].files}
    assert sample["metromap/images/america/cleveland.png"] == (
        "https://raw.githubusercontent.com/Ziqiao-Shang/MapTab/a0a1a83f36dcd6cbb85249608ce497a748235bba/"
        "metromap/images/america/cleveland.png"
    )
    demo = {f.path: f.url for f in DATASETS["mapsatisfy-demo"].files}
    assert demo["demo_bench.xlsx"].endswith(
        "/wanzw404/MapSatisfyBench/7ec4455b0755b140d0f49071b33d7114aa1e7cc4/data/inputs/demo_bench.xlsx"
    )
    assert demo["mock_data/get_navigation.csv"].endswith("/data/sandbox/mock_data/get_navigation.csv")
    assert DATASETS["maptab-full"].hub is not None and DATASETS["maptab-full"].hub.repo_id == "szq-nju/MapTab"


# -- fetching -------------------------------------------------------------------------------


def test_fetch_downloads_verifies_and_then_skips(
    server: PeersServer, peers: Path, capsys, _isolated_cache: Path
) -> None:
    code, out, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 0, err
    folder = _isolated_cache / "maptab-sample"
    assert _tree(folder) == _tree(peers / "maptab")
    assert "maptab-sample: 88 downloaded, 0 already verified" in out
    assert not list(folder.rglob("*.part"))

    server.requests.clear()
    code, out, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 0, err
    assert "0 downloaded, 88 already verified" in out
    assert server.requests == []  # verified files are not even asked for


def test_fetch_into_cache_option_and_list_and_path(server: PeersServer, peers: Path, capsys, tmp_path: Path) -> None:
    cache = tmp_path / "elsewhere"
    code, out, _ = run_cli(capsys, "list", "--cache", str(cache))
    assert code == 0
    row = next(line for line in out.splitlines() if "mapsatisfy-demo" in line)
    assert "not cached" in row and "7.2 MB" in row and "20" in row
    code, _, err = run_cli(
        capsys, "fetch", "mapsatisfy_demo", "--cache", str(cache), "--url-base", f"{server.url}/mapsatisfy"
    )
    assert code == 0, err
    expected = {k: v for k, v in _tree(peers / "mapsatisfy").items() if f"mapsatisfy/{k}" not in NOT_FETCHED}
    assert _tree(cache / "mapsatisfy-demo") == expected
    code, out, _ = run_cli(capsys, "list", "--cache", str(cache))
    row = next(line for line in out.splitlines() if "mapsatisfy-demo" in line)
    assert "| cached" in row
    code, out, _ = run_cli(capsys, "path", "mapsatisfy-demo", "--cache", str(cache))
    assert out.strip() == str(cache / "mapsatisfy-demo")


def test_checksum_mismatch_names_the_file_deletes_it_and_a_rerun_resumes(
    server: PeersServer, peers: Path, capsys, _isolated_cache: Path
) -> None:
    bad = "maptab/metromap/tabulars/america/cleveland_edge.json"
    server.corrupt_once.add(bad)
    code, out, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[-1].startswith("geoeval: error: metromap/tabulars/america/cleveland_edge.json: checksum mismatch")
    folder = _isolated_cache / "maptab-sample"
    target = folder / "metromap/tabulars/america/cleveland_edge.json"
    assert not target.exists() and not target.with_name(target.name + ".part").exists()
    done_before = {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".geoeval-")
    }
    assert 0 < len(done_before) < 88
    assert cache_state("maptab-sample").label == f"partial ({len(done_before)}/88 files)"

    server.requests.clear()
    code, out, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 0, err
    assert f"{88 - len(done_before)} downloaded, {len(done_before)} already verified" in out
    asked = {path.removeprefix("/maptab/") for path in _file_requests(server)}
    assert asked.isdisjoint(done_before) and "metromap/tabulars/america/cleveland_edge.json" in asked
    assert _tree(folder) == _tree(peers / "maptab")


def test_an_interrupted_download_resumes_with_a_range_request(
    server: PeersServer, peers: Path, capsys, _isolated_cache: Path
) -> None:
    image = "maptab/metromap/images/america/cleveland.png"
    server.interrupt[image] = 1
    code, _, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 0, err
    size = (peers / image).stat().st_size
    asks = [rng for path, rng in server.requests if path == f"/{image}"]
    assert asks == [None, f"bytes={size // 2}-"]
    assert (_isolated_cache / "maptab-sample" / image.removeprefix("maptab/")).read_bytes() == (
        peers / image
    ).read_bytes()


def test_a_download_that_keeps_breaking_fails_keeps_the_part_and_a_rerun_finishes(
    server: PeersServer, peers: Path, capsys, _isolated_cache: Path
) -> None:
    image = "maptab/travelmap/images/cambodia/angkorWar.png"
    server.interrupt[image] = datasets.ATTEMPTS
    code, _, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 1
    message = err.strip().splitlines()[-1]
    assert message.startswith("geoeval: error: travelmap/images/cambodia/angkorWar.png: download from ")
    assert "interrupted" in message and "run the same command again to resume" in message
    part = _isolated_cache / "maptab-sample" / "travelmap/images/cambodia/angkorWar.png.part"
    kept = part.stat().st_size
    assert 0 < kept < (peers / image).stat().st_size

    server.requests.clear()
    code, _, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/maptab/")
    assert code == 0, err
    assert (f"/{image}", f"bytes={kept}-") in server.requests
    assert not part.exists()
    assert _tree(_isolated_cache / "maptab-sample") == _tree(peers / "maptab")


def test_a_missing_file_on_the_server_is_an_http_error_naming_it(server: PeersServer, capsys) -> None:
    code, _, err = run_cli(capsys, "fetch", "maptab-sample", "--url-base", f"{server.url}/nowhere/")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("geoeval: error: metromap/data/test_set/") and "HTTP 404 from" in last
    assert "/nowhere/" in last


def test_unknown_dataset_is_a_one_line_usage_error(capsys) -> None:
    code, out, err = run_cli(capsys, "fetch", "maptab-everything")
    assert code == 2 and out == ""
    assert err.strip() == (
        "geoeval: error: unknown dataset 'maptab-everything': choose one of maptab-sample, "
        "mapsatisfy-demo, maptab-full (see `geoeval data list`)"
    )


def test_maptab_full_is_listed_by_the_hub_api_and_verified_by_its_checksums(
    server: PeersServer, peers: Path, capsys, _isolated_cache: Path
) -> None:
    code, out, err = run_cli(capsys, "list")
    assert next(line for line in out.splitlines() if "maptab-full" in line).count("?") == 2  # files, size
    code, out, err = run_cli(capsys, "fetch", "maptab-full", "--url-base", server.url)
    assert code == 0, err
    folder = _isolated_cache / "maptab-full"
    assert _tree(folder) == _tree(peers / "maptab")
    tree_pages = [path for path, _ in server.requests if path == HUB_TREE]
    assert len(tree_pages) == 3  # 89 entries in pages of 40
    manifest = json.loads((folder / datasets.MANIFEST_FILE).read_text())
    png = next(entry for entry in manifest if entry["path"].endswith("cleveland.png"))
    assert png["sha256"] and not png["git_sha1"]
    assert all(entry["git_sha1"] for entry in manifest if not entry["path"].endswith(".png"))
    assert cache_state("maptab-full").complete

    # a corrupted non-LFS file fails its git blob id
    (folder / "metromap/tabulars/america/cleveland_vertex.csv").unlink()
    server.corrupt_once.add("maptab/metromap/tabulars/america/cleveland_vertex.csv")
    code, _, err = run_cli(capsys, "fetch", "maptab-full", "--url-base", server.url)
    assert code == 1 and "cleveland_vertex.csv: checksum mismatch (got git-sha1:" in err


def test_hub_paths_that_leave_the_folder_are_refused() -> None:
    for bad in ("../evil.txt", "/etc/passwd", "a/../../b", "a\\b"):
        with pytest.raises(FetchError, match="would leave the dataset folder"):
            datasets._safe_relative(bad)


def test_next_link_reads_the_hub_pagination_header() -> None:
    header = '<https://huggingface.co/api/x?cursor=abc>; rel="next", <https://h/y>; rel="prev"'
    assert datasets._next_link(header) == "https://huggingface.co/api/x?cursor=abc"
    assert datasets._next_link("") is None


# -- what environments use --------------------------------------------------------------------


def test_resolve_root_uses_the_configured_folder_else_the_cache_and_prints_the_command(
    server: PeersServer, tmp_path: Path
) -> None:
    existing = tmp_path / "my-maptab"
    existing.mkdir()
    assert resolve_root(existing, "maptab-sample") == existing
    with pytest.raises(GeoevalError) as unset:
        resolve_root(None, "maptab-sample")
    assert str(unset.value).startswith("env.root is not set and the data cache ")
    assert "is empty: fetch the data with `geoeval data fetch maptab-sample`" in str(unset.value)
    fetch("maptab-sample", url_base=f"{server.url}/maptab/")
    assert resolve_root(None, "maptab-sample") == datasets.dataset_dir("maptab-sample")
    assert resolve_root("", "maptab-sample") == datasets.dataset_dir("maptab-sample")
    # a root that is given but wrong is an error even when the cache holds the data
    with pytest.raises(GeoevalError) as wrong:
        resolve_root(tmp_path / "absent", "mapsatisfy_demo")
    assert str(wrong.value).startswith(
        f"env.root: {tmp_path / 'absent'} is not a directory. Get the data with `geoeval data fetch mapsatisfy-demo`"
    )


def test_the_fetched_sample_loads_as_the_authors_environment(server: PeersServer) -> None:
    from geoeval.suites.maptab.authors.env import load_authors_items

    summary = fetch("maptab-sample", url_base=f"{server.url}/maptab/")
    items = load_authors_items(summary.folder, ["metromap", "travelmap"], None)
    assert {item["scenario"] for item in items} == {"metromap", "travelmap"}
    assert len({item["category"] for item in items}) == 12


def test_the_fetched_demo_loads_as_the_replay_store_and_bench(server: PeersServer, peers: Path) -> None:
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store
    from geoeval.suites.mapsatisfy.schema import load_demo_bench

    summary = fetch("mapsatisfy-demo", url_base=f"{server.url}/mapsatisfy/")
    fetched = load_mock_store(summary.folder / "mock_data")
    original = load_mock_store(peers / "mapsatisfy" / "mock_data")
    assert (len(fetched), fetched.tools) == (len(original), original.tools)
    assert [i.task_id for i in load_demo_bench(summary.folder / "demo_bench.xlsx")] == [
        i.task_id for i in load_demo_bench(peers / "mapsatisfy" / "demo_bench.xlsx")
    ]


def test_an_unreachable_host_says_so(capsys) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, _, err = run_cli(capsys, "fetch", "mapsatisfy-demo", "--url-base", f"http://127.0.0.1:{port}/")
    assert code == 1
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(f"geoeval: error: LICENSE: cannot reach http://127.0.0.1:{port}/LICENSE (")
    )
