"""Generating the synthetic city's social-media notes and comments, with their ground-truth
mentions and facts (seeded)."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner.city.layout import _typo
from geoeval.suites.lifeplanner.city.vocabulary import (
    _COMMENT_FACT,
    _COMMENT_NOISE,
    _FILLER,
    _GENERAL_TITLES,
    _HASHTAGS,
    _HOOKS,
    _LONG_SENTENCES,
    _SHORT_SENTENCES,
    _TAG_SENTENCES,
)


def _mention(p: dict[str, Any], kind: str, rng: np.random.Generator) -> tuple[str, str]:
    """How a post names a place. Returns (text, kind actually used)."""
    if kind == "alias" and p["alias"]:
        return p["alias"], "alias"
    if kind == "brand" and p["_brand"]:
        return p["_brand"], "brand"  # ambiguous: every branch of the chain
    if kind == "typo":
        words = p["name"].split()
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        words[longest] = _typo(words[longest], rng)
        return " ".join(words), "typo"
    if kind == "partial":
        return p["name"].split()[0].lower(), "partial"
    if kind == "landmark":
        return f"the {p['place_type'].split('|')[1].lower()} on {p['_road']}", "landmark"
    return p["name"], "exact"


_MENTION_KINDS = ("exact", "alias", "brand", "partial", "typo", "landmark")
_MENTION_P = np.array([0.45, 0.10, 0.10, 0.15, 0.10, 0.10])


def _fact_sentence(fact: tuple[str, str, str], rng: np.random.Generator) -> str:
    source, key, value = fact
    t: tuple[str, ...]
    if source == "long":
        t = _LONG_SENTENCES[key]
    elif source == "short":
        t = _SHORT_SENTENCES[key]
    else:
        t = _TAG_SENTENCES
    return t[int(rng.integers(0, len(t)))].format(v=value)


def _place_facts(p: dict[str, Any]) -> list[tuple[str, str, str]]:
    facts = [("long", k, v) for k, vs in p["_long"] for v in vs]
    facts += [("short", k, v) for k, vs in p["_short"] for v in vs]
    facts += [("tag", k, v) for k, vs in p["_tags"] for v in vs]
    return facts


def _note_ts(rng: np.random.Generator, n: int) -> np.ndarray:
    start = datetime(2023, 1, 1, tzinfo=timezone.utc).timestamp()
    end = datetime(2025, 10, 31, tzinfo=timezone.utc).timestamp()
    return rng.integers(int(start), int(end), n)


def _hex_ids(rng: np.random.Generator, ts: np.ndarray) -> list[str]:
    """RedNote-style 24-hex ids: 8 hex of the timestamp + 16 random hex; unique."""
    lo = rng.integers(0, 2**32, size=(len(ts), 2), dtype=np.uint64)
    ids = [f"{int(t):08x}{int(a):08x}{int(b):08x}" for t, (a, b) in zip(ts, lo)]
    seen: set[str] = set()
    for i, v in enumerate(ids):
        while v in seen:
            v = v[:8] + f"{int(rng.integers(0, 2**32)):08x}" + v[16:]
        seen.add(v)
        ids[i] = v
    return ids


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).replace(tzinfo=None)


def _build_notes(
    rng: np.random.Generator,
    places: list[dict[str, Any]],
    n_notes: int,
    comments_per_note: float,
    districts: list[tuple[str, float, float]],
) -> dict[str, dict[str, list]]:
    n_places = len(places)
    # which place a note is about: popularity-weighted, at most `cap` notes per place (the paper
    # collects up to 20 per place); 5% of notes are general posts about no place.
    n_general = int(round(0.05 * n_notes))
    n_about = n_notes - n_general
    cap = max(20, math.ceil(1.5 * n_about / max(1, n_places)))
    pop = np.array([p["popularity"] for p in places])
    counts = rng.multinomial(n_about, pop / pop.sum()) if n_places else np.zeros(0, dtype=int)
    for _ in range(50):  # push overflow to places below the cap
        over = np.clip(counts - cap, 0, None)
        if over.sum() == 0:
            break
        counts -= over
        room = np.clip(cap - counts, 0, None).astype(float)
        counts += rng.multinomial(int(over.sum()), room / room.sum())
    about = np.repeat(np.arange(n_places), counts)
    about = np.concatenate([about, -np.ones(n_general, dtype=np.int64)])
    rng.shuffle(about)

    ts = _note_ts(rng, n_notes)
    note_ids = _hex_ids(rng, ts)
    kinds = rng.choice(len(_MENTION_KINDS), size=n_notes, p=_MENTION_P)
    liked = np.floor(rng.lognormal(3.0, 1.4, n_notes)).astype(np.int64)
    n_comments = np.minimum(10, rng.poisson(comments_per_note, n_notes))
    crawl = rng.random(n_notes) < 0.08  # a food crawl: mentions 1-2 more places
    # nearest places to each place, for crawl notes (a multi-place post mentions neighbours)
    xy = np.array([(p["x_m"], p["y_m"]) for p in places]) if n_places else np.zeros((0, 2))

    notes: dict[str, list] = {
        k: []
        for k in (
            "note_id",
            "title",
            "desc",
            "time",
            "liked_count",
            "collected_count",
            "comment_count",
            "share_count",
            "tag_list",
            "search_text",
        )
    }
    mentions: dict[str, list] = {"note_id": [], "place_id": [], "mention": [], "mention_kind": [], "role": []}
    nfacts: dict[str, list] = {"note_id": [], "place_id": [], "fact": [], "source": []}
    comments: dict[str, list] = {"comment_id": [], "note_id": [], "time": [], "content": [], "like_count": []}
    comment_ts = []

    for k in range(n_notes):
        nid = note_ids[k]
        pk = int(about[k])
        tags = [_HASHTAGS[i] for i in rng.choice(len(_HASHTAGS), size=int(rng.integers(1, 3)), replace=False)]
        if pk < 0:  # a general post: districts and filler, no place
            d = districts[int(rng.integers(0, len(districts)))][0]
            title = _GENERAL_TITLES[int(rng.integers(0, len(_GENERAL_TITLES)))].format(d=d)
            body = [_FILLER[i] for i in rng.choice(len(_FILLER), size=3, replace=False)]
            tags.append(d)
            desc = " ".join(body)
        else:
            p = places[pk]
            text, kind = _mention(p, _MENTION_KINDS[int(kinds[k])], rng)
            mentions["note_id"].append(nid)
            mentions["place_id"].append(p["id"])
            mentions["mention"].append(text)
            mentions["mention_kind"].append(kind)
            mentions["role"].append("subject")
            hook = _HOOKS[int(rng.integers(0, len(_HOOKS)))]
            t_kind = int(rng.integers(0, 4))
            title = (
                f"{text} | {hook}",
                f"{hook.capitalize()} at {text}",
                f"{p['_district']} finds: {text}",
                hook.capitalize(),
            )[t_kind]
            facts = _place_facts(p)
            chosen = (
                [facts[i] for i in rng.choice(len(facts), size=min(len(facts), int(rng.integers(1, 4))), replace=False)]
                if facts
                else []
            )
            body = [f"Finally visited {text}." if t_kind == 3 else f"Some notes on {text}."]
            body += [_fact_sentence(f, rng) for f in chosen]
            body.append(_FILLER[int(rng.integers(0, len(_FILLER)))])
            if crawl[k] and n_places > 1:
                d2 = (xy[:, 0] - xy[pk, 0]) ** 2 + (xy[:, 1] - xy[pk, 1]) ** 2
                near = [int(i) for i in np.argsort(d2, kind="stable")[1:6]]
                for j in near[: int(rng.integers(1, 3))]:
                    q = places[j]
                    qtext, qkind = _mention(q, _MENTION_KINDS[int(rng.choice(len(_MENTION_KINDS), p=_MENTION_P))], rng)
                    body.append(f"Then walked over to {qtext}.")
                    mentions["note_id"].append(nid)
                    mentions["place_id"].append(q["id"])
                    mentions["mention"].append(qtext)
                    mentions["mention_kind"].append(qkind)
                    mentions["role"].append("also")
            for f in chosen:
                nfacts["note_id"].append(nid)
                nfacts["place_id"].append(p["id"])
                nfacts["fact"].append(f"{f[0]}:{f[1]}:{f[2]}")
                nfacts["source"].append("desc")
            tags.append(p["_noun"])
            tags.append(p["_district"])
            desc = " ".join(body)
        # comments: noise, questions, and sometimes another fact about the same place
        nc = int(n_comments[k])
        c_ts = ts[k] + rng.exponential(3 * 86400, nc).astype(np.int64) + 60
        c_like = np.floor(rng.lognormal(0.5, 1.2, nc)).astype(np.int64)
        for c in range(nc):
            if pk >= 0 and rng.random() < 0.3:
                p = places[pk]
                facts = _place_facts(p)
                f = facts[int(rng.integers(0, len(facts)))] if facts else None
                if f is not None:
                    content = _COMMENT_FACT[int(rng.integers(0, len(_COMMENT_FACT)))].format(s=_fact_sentence(f, rng))
                    nfacts["note_id"].append(nid)
                    nfacts["place_id"].append(p["id"])
                    nfacts["fact"].append(f"{f[0]}:{f[1]}:{f[2]}")
                    nfacts["source"].append("comment")
                else:
                    content = _COMMENT_NOISE[int(rng.integers(0, len(_COMMENT_NOISE)))]
            else:
                content = _COMMENT_NOISE[int(rng.integers(0, len(_COMMENT_NOISE)))]
            comments["note_id"].append(nid)
            comments["content"].append(content)
            comments["like_count"].append(int(c_like[c]))
            comment_ts.append(int(c_ts[c]))
        tag_list = ",".join(dict.fromkeys(tags))
        lk = int(liked[k])
        notes["note_id"].append(nid)
        notes["title"].append(title)
        notes["desc"].append(desc)
        notes["time"].append(_utc(int(ts[k])))
        notes["liked_count"].append(lk)
        notes["collected_count"].append(int(lk * rng.uniform(0.2, 1.0)))
        notes["comment_count"].append(nc + int(rng.poisson(lk * 0.02)))
        notes["share_count"].append(int(lk * rng.uniform(0.0, 0.15)))
        notes["tag_list"].append(tag_list)
        notes["search_text"].append(f"{title} {desc} {tag_list}".lower())

    cts = np.array(comment_ts, dtype=np.int64)
    comments["comment_id"] = _hex_ids(rng, cts)
    comments["time"] = [_utc(int(t)) for t in cts]
    return {"notes": notes, "mentions": mentions, "facts": nfacts, "comments": comments}
