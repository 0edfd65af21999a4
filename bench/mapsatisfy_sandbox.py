"""MapSatisfy replay sandbox at scale (run by hand, not in CI):

    .venv/bin/python bench/mapsatisfy_sandbox.py [--records 100000] [--lookups 400] [--embedder e5|hashing]

Synthesises a store of `--records` recorded calls (half `search_around_poi`: open-text keyword +
coordinates; half `get_navigation`: coordinates only; 2,000 distinct keywords), then times:

- indexing: embedding every distinct open text once and grouping the anchors (the embedder warm);
- the exact stage: `lookup` of recorded calls re-formatted (coordinates as strings, keys
  reordered), which the normalised key must find;
- the vector stage: `lookup` of calls with coordinates moved by up to 2e-4 (inside the 5e-4
  tolerance) and a keyword rewritten, so the exact key misses and the vector stage answers
  (or declines under the threshold: its time is measured either way);
and, in the same run, the baselines they replace: a linear scan comparing normalised keys, and a
brute-force vector scan (per-record anchor check and cosine, embeddings precomputed). Prints the
per-lookup p50 / p95 and the ratio baseline / sandbox. Issue 5's targets: exact p95 <= 5 ms,
vector p95 <= 50 ms over 100,000 calls with the embedder warm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geoeval.suites.mapsatisfy.replay.arguments import normalize_arguments  # noqa: E402
from geoeval.suites.mapsatisfy.replay.embedders import E5Embedder, HashingEmbedder  # noqa: E402
from geoeval.suites.mapsatisfy.replay.matcher import COORDINATE_TOLERANCE, anchor_signature, open_text  # noqa: E402
from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox  # noqa: E402
from geoeval.suites.mapsatisfy.replay.store import RecordStore  # noqa: E402

CATEGORIES = (
    "火锅",
    "咖啡馆",
    "川菜",
    "充电站",
    "加油站",
    "停车场",
    "商场",
    "公园",
    "博物馆",
    "药店",
    "健身房",
    "洗车",
    "电影院",
    "烧烤",
    "面馆",
    "书店",
    "酒店",
    "超市",
    "医院",
    "银行",
    "理发店",
    "宠物店",
    "花店",
    "奶茶",
    "日料",
    "西餐",
    "亲子餐厅",
    "网吧",
    "KTV",
    "按摩",
    "便利店",
    "菜市场",
    "体育馆",
    "游泳馆",
    "图书馆",
    "景点",
    "地铁站",
    "公交站",
    "汽车站",
    "火车站",
)
MODIFIERS = (
    "",
    "24小时",
    "附近的",
    "便宜的",
    "好评",
    "适合聚餐的",
    "安静的",
    "亲子",
    "可停车的",
    "连锁",
    "老字号",
    "新开的",
    "网红",
    "深夜",
    "早餐",
    "平价",
    "高端",
    "宠物友好",
    "有包间的",
    "露天",
    "带充电桩的",
    "无障碍",
    "可预约的",
    "团购",
    "外卖",
    "自助",
    "特色",
    "本地人推荐的",
    "环境好的",
    "性价比高的",
    "排队少的",
    "营业到很晚的",
    "离地铁近的",
    "适合约会的",
    "适合拍照的",
    "适合学习的",
    "免费停车",
    "大型",
    "小众",
    "评分4.5以上的",
    "人均50以内",
    "人均100左右",
    "周末营业的",
    "节假日开放",
    "可刷卡",
    "有WiFi的",
    "可带娃",
    "有儿童区的",
    "有吸烟区的",
    "有Wi-Fi的",
)


def synthesise(n: int, seed: int = 0) -> tuple[RecordStore, list[tuple[str, dict]]]:
    rng = np.random.default_rng(seed)
    keywords = [m + c for c in CATEGORIES for m in MODIFIERS][:2000]
    store, calls = RecordStore(), []
    for i in range(n):
        lon, lat = 120.0 + float(rng.uniform(0, 0.5)), 30.0 + float(rng.uniform(0, 0.5))
        if i % 2 == 0:
            tool = "search_around_poi"
            args = {
                "query": keywords[int(rng.integers(len(keywords)))],
                "x": round(lon, 6),
                "y": round(lat, 6),
                "range": 3000,
            }
        else:
            tool = "get_navigation"
            args = {
                "start_lon": round(lon, 6),
                "start_lat": round(lat, 6),
                "end_lon": round(lon + float(rng.uniform(-0.05, 0.05)), 6),
                "end_lat": round(lat + float(rng.uniform(-0.05, 0.05)), 6),
                "mode": "driving",
            }
        store.add(tool, args, json.dumps({"i": i}), trace_id=f"t{i}")
        calls.append((tool, args))
    return store, calls


def reformatted(args: dict) -> dict:
    """The same call as an agent might write it: numbers as strings, keys reversed."""
    return {k: (str(v) if isinstance(v, float) else v) for k, v in reversed(list(args.items()))}


def perturbed(tool: str, args: dict, rng: np.random.Generator) -> dict:
    out = {k: (round(v + float(rng.uniform(-2e-4, 2e-4)), 6) if isinstance(v, float) else v) for k, v in args.items()}
    if tool == "search_around_poi":
        out["query"] = out["query"] + "店"  # a rewrite the exact key cannot match
    return out


def pct(times: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(times) * 1000, q))


def linear_exact(store: RecordStore, tool: str, args: dict) -> object:
    key = json.dumps(normalize_arguments(tool, args), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for record in store.records(tool):
        if record.key == key:
            return record
    return None


def brute_vector(records: list, matrix: np.ndarray, embedder, tool: str, args: dict) -> object:
    """Per-record anchor check and cosine: what the grouped, vectorised index replaces."""
    norm = normalize_arguments(tool, args)
    shape, numbers = anchor_signature(tool, norm)
    text = open_text(tool, norm)
    q = embedder.embed([text])[0] if text else None
    if q is not None:
        q = q / (np.linalg.norm(q) or 1.0)
    best, best_sim = None, -1.0
    for row, record in enumerate(records):
        r_shape, r_numbers = anchor_signature(tool, normalize_arguments(tool, record.arguments))
        if (
            r_shape != shape
            or max((abs(a - b) for a, b in zip(r_numbers, numbers)), default=0.0) > COORDINATE_TOLERANCE
        ):
            continue
        sim = float(matrix[row] @ q) if q is not None else 1.0
        if sim > best_sim:
            best, best_sim = record, sim
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--lookups", type=int, default=400)
    ap.add_argument("--baseline-lookups", type=int, default=40, help="the brute-force vector scan is slow")
    ap.add_argument("--embedder", choices=("e5", "hashing"), default="e5")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="e5 engine threads (default 1, as the sandbox's default embedder; 0: the engine's own choice)",
    )
    a = ap.parse_args()

    embedder = E5Embedder(num_threads=a.threads or None) if a.embedder == "e5" else HashingEmbedder()
    embedder.embed(["warm-up"])
    t0 = time.perf_counter()
    store, calls = synthesise(a.records)
    print(f"synthesised {len(store):,} recorded calls in {time.perf_counter() - t0:.1f} s ({a.embedder} embedder)")
    sandbox = ReplaySandbox(store, embedder=embedder)
    t0 = time.perf_counter()
    sandbox.build_index()
    print(f"index: {time.perf_counter() - t0:.2f} s (every distinct open text embedded once)")

    rng = np.random.default_rng(1)
    picks = [calls[int(i)] for i in rng.integers(0, len(calls), a.lookups)]

    def timed(fn, items):
        out, kinds = [], {}
        for tool, args in items:
            t = time.perf_counter()
            res = fn(tool, args)
            out.append(time.perf_counter() - t)
            kind = getattr(res, "match_type", "found" if res is not None else "none")
            kinds[kind] = kinds.get(kind, 0) + 1
        return out, kinds

    exact_items = [(t, reformatted(x)) for t, x in picks]
    exact_t, exact_kinds = timed(sandbox.lookup, exact_items)
    scan_t, _ = timed(lambda t, x: linear_exact(store, t, x), exact_items[: a.baseline_lookups * 5])
    vec_items = [(t, perturbed(t, x, rng)) for t, x in picks]
    vec_t, vec_kinds = timed(sandbox.lookup, vec_items)
    mats = {}
    for tool in store.tools:
        recs = store.records(tool)
        texts = [open_text(tool, normalize_arguments(tool, r.arguments)) for r in recs]
        if not any(texts):  # no open text (navigation): the anchors alone decide
            mats[tool] = (recs, np.zeros((len(recs), 1)))
            continue
        distinct = sorted(set(texts))
        emb = embedder.embed(distinct)
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        pos = {s: i for i, s in enumerate(distinct)}
        mats[tool] = (recs, emb[[pos[s] for s in texts]])
    brute_t, _ = timed(lambda t, x: brute_vector(*mats[t], embedder, t, x), vec_items[: a.baseline_lookups])

    print(f"\n{'stage':<34} {'lookups':>7} {'p50 ms':>9} {'p95 ms':>9}  match types")
    rows = [
        ("exact (sandbox)", exact_t, exact_kinds),
        ("exact baseline: linear key scan", scan_t, {}),
        ("vector (sandbox)", vec_t, vec_kinds),
        ("vector baseline: brute-force scan", brute_t, {}),
    ]
    for name, ts, kinds in rows:
        print(f"{name:<34} {len(ts):>7} {pct(ts, 50):>9.3f} {pct(ts, 95):>9.3f}  {kinds or ''}")
    print(
        f"\nratio baseline / sandbox (p50): exact {statistics.median(scan_t) / statistics.median(exact_t):.0f}x, "
        f"vector {statistics.median(brute_t) / statistics.median(vec_t):.0f}x"
    )
    print(
        f"targets (issue 5): exact p95 {pct(exact_t, 95):.3f} ms <= 5 ms: {pct(exact_t, 95) <= 5}; "
        f"vector p95 {pct(vec_t, 95):.3f} ms <= 50 ms: {pct(vec_t, 95) <= 50}"
    )


if __name__ == "__main__":
    main()
