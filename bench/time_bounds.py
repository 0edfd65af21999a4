"""How fast geoeval fails, reads hostile replies and answers hostile tool calls (run by hand, not in CI):

    .venv/bin/python bench/time_bounds.py [--repeats 3] [--skip-cli]

These bounds were wall-clock assertions in the unit tests, where a shared CI machine made them
either loose or flaky; the tests keep the behaviour (the right answer, the one-line error, a hang
guard) and this script keeps the speed. Each measurement is printed with a baseline measured in the
same run on the same machine, the ratio between them, and the ratio's target:

- answer extraction (MapTab's route and QA tags, the authors'-format reader of `geoeval score`) on
  ~1 MB tag bombs, against a plain reply of the same length: linear time means a ratio near 1;
- the model-endpoint preflight: a 501, a closed port and a server that never answers, against an
  endpoint that answers at once (and the hang against the probe timeout it must respect);
- LifePlanner's pure tools given a hostile value (1 MB strings, 10,000 keywords, deep nesting),
  against the same tool's valid call;
- MapTab's exact route search on 40-station maps against 10-station maps;
- a whole `python -m geoeval` run against an endpoint answering 501, against the same run with the
  offline oracle (the run must stop at the preflight, before any work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ROWS: list[tuple[str, float, float, float]] = []  # (what, seconds, baseline seconds, target ratio)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def row(what: str, seconds: float, baseline: float, target: float) -> None:
    ROWS.append((what, seconds, baseline, target))
    ratio = seconds / baseline if baseline > 0 else float("inf")
    verdict = "met" if ratio <= target else "NOT MET"
    print(
        f"{what:<58} {seconds * 1000:10.1f} ms  baseline {baseline * 1000:9.1f} ms  "
        f"ratio {ratio:7.2f}  (target <= {target:g}: {verdict})",
        flush=True,
    )


def answer_extraction(repeats: int) -> None:
    from geoeval.suites.maptab.cli import _tagged_route
    from geoeval.suites.maptab.scorers import extract_answer, extract_qa_answer

    bombs = {
        "unclosed route/answer tags": "<route_begin> <answer_begin>\n  " * 35_000,
        "a route tag then 1 MB of spaces": "<route_begin>" + " " * 1_000_000 + "x",
        "an answer tag then 1 MB of spaces": "<answer_begin>" + " " * 1_000_000 + "x",
    }
    for name, bomb in bombs.items():
        plain = ("Take Alder Park-Birch Lane(transfer)-Cedar Street. " * (len(bomb) // 52 + 1))[: len(bomb)]
        row(
            f"extract_answer + extract_qa_answer: {name}",
            best_of(lambda b=bomb: (extract_answer(b), extract_qa_answer(b)), repeats),
            best_of(lambda p=plain: (extract_answer(p), extract_qa_answer(p)), repeats),
            5,
        )
        row(
            f"geoeval score's reader: {name}",
            best_of(lambda b=bomb: _tagged_route(b), repeats),
            best_of(lambda p=plain: _tagged_route(p), repeats),
            5,
        )


class _Endpoint:
    """POST .../<mode>/v1/chat/completions: `ok` answers a chat completion, `501` refuses,
    `hang` never answers until the server stops."""

    def __init__(self) -> None:
        stopping = self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                mode = self.path.split("/")[1]
                if mode == "hang":
                    stopping.wait(30)
                    return
                body = json.dumps(
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "m",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": "p"}, "finish_reason": "length"}
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                status = 200 if mode == "ok" else 501
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}/v1"

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def endpoint() -> Iterator[_Endpoint]:
    server = _Endpoint()
    try:
        yield server
    finally:
        server.stop()


def preflight_probes(repeats: int) -> None:
    from geoeval.core.run.preflight import check_endpoint

    timeout_s = 1.0

    def probe(url: str) -> None:
        check_endpoint("evaluated model", "openai-api/local/m", url, "k", timeout_s=timeout_s, environ={})

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    with endpoint() as server:
        ok = best_of(lambda: probe(server.url("ok")), repeats)
        row("preflight: an endpoint answering 501", best_of(lambda: probe(server.url("501")), repeats), ok, 5)
        row("preflight: a closed port", best_of(lambda: probe(closed), repeats), ok, 5)
        hang = best_of(lambda: probe(server.url("hang")), 1)
        row("preflight: a server that never answers (vs the 1 s timeout)", hang, timeout_s, 1.5)


def hostile_tool_calls(repeats: int) -> None:
    from geoeval.suites.lifeplanner.city.environment import build_synthetic_city
    from geoeval.suites.lifeplanner.tools import nearby, notes, places, routing
    from geoeval.suites.lifeplanner.tools.city import open_city

    work = Path(tempfile.mkdtemp(prefix="geoeval-bench-bounds-"))
    build_synthetic_city(work / "city.duckdb", seed=7, n_places=300, n_notes=1500)
    city = open_city(work / "city.duckdb")
    ids = [r[0] for r in city.con.execute("SELECT id FROM places ORDER BY id LIMIT 3").fetchall()]
    calls = {  # (tool, valid keyword arguments, the parameter a hostile value replaces)
        "place_search": (places.place_search, {"query_name": "cafe"}, "query_name"),
        "place_detail": (places.place_detail, {"place_id": ids[0]}, "place_id"),
        "nearby_search": (nearby.nearby_search, {"center": ids[0]}, "center"),
        "routing": (routing.routing, {"start_place_id": ids[0], "end_place_id": ids[1]}, "end_place_id"),
        "search_notes": (notes.search_notes, {"keyword": "quiet"}, "keyword"),
        "multi_stop_routing": (routing.multi_stop_routing, {"stop_ids": ids}, "stop_ids"),
    }
    nested: list[object] = []
    for _ in range(4999):
        nested = [nested]
    hostile = {
        "1 MB string": "x" * 1_000_000,
        "10,000 keywords": [f"k{i}" for i in range(10_000)],
        "nested 5000 deep": nested,
        "1 MB of commas": "," * 1_000_000,
    }
    for tool, (fn, valid, param) in calls.items():
        base = best_of(lambda f=fn, v=valid: f(city, **v), repeats)
        worst = max(best_of(lambda f=fn, v=valid, h=h: f(city, **{**v, param: h}), repeats) for h in hostile.values())
        row(f"LifePlanner {tool}: its slowest hostile value", worst, base, 20)


def route_search(repeats: int) -> None:
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.routing.search import optimal_routes

    weights = (1.0, 0.0, 0.0, 0.0)

    def searches(n_lines: int) -> float:
        total = 0.0
        for seed in range(3):
            m = generate_metro_map(seed, n_lines=n_lines, loop_probability=1.0)
            rng = random.Random(seed)
            for _ in range(8):
                s, t = rng.sample(sorted(m.stations), 2)
                total += best_of(lambda m=m, s=s, t=t: optimal_routes(m, s, t, weights), repeats)
        return total / 24

    row("MapTab optimal_routes: 40-station maps vs 10-station maps", searches(6), searches(2), 50)


def dead_endpoint_run() -> None:
    def run(*overrides: str) -> float:
        work = Path(tempfile.mkdtemp(prefix="geoeval-bench-dead-"))
        cmd = [
            sys.executable,
            "-m",
            "geoeval",
            *overrides,
            "tracking=none",
            f"results_db={work}/r.duckdb",
            f"log_dir={work}/logs",
            f"work_dir={work}/work",
            "runner=local",
            "env.n_maps=1",
            "suite.categories=[edge_only]",
            "suite.n_per_category=1",
        ]
        t = time.perf_counter()
        subprocess.run(
            cmd, cwd=work, capture_output=True, text=True, timeout=300, env={**os.environ, "LOCAL_API_KEY": "k"}
        )
        return time.perf_counter() - t

    with endpoint() as server:
        dead = run("model=openai_api", "model.name=openai-api/local/m", f"model.base_url={server.url('501')}")
    row("python -m geoeval against a 501 endpoint vs the oracle's run", dead, run("model=oracle"), 1.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-cli", action="store_true", help="leave out the two `python -m geoeval` runs")
    a = p.parse_args()
    answer_extraction(a.repeats)
    preflight_probes(a.repeats)
    hostile_tool_calls(a.repeats)
    route_search(a.repeats)
    if not a.skip_cli:
        dead_endpoint_run()
    unmet = [r for r in ROWS if r[2] > 0 and r[1] / r[2] > r[3]]
    ratios = [r[1] / r[2] for r in ROWS if r[2] > 0]
    print(f"\n{len(ROWS) - len(unmet)} of {len(ROWS)} targets met; median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
