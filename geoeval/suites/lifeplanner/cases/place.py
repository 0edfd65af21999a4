"""Place Perception cases (L0 an attribute of a named place, L1 a verdict or a choice among named
places, L2 the place that fits an implied preference)."""

from __future__ import annotations

from typing import Any

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import Place
from geoeval.suites.lifeplanner.cases.lexicon import DISLIKES, PREFERENCES, TYPE_NOUNS
from geoeval.suites.lifeplanner.cases.routes import RouteSteps
from geoeval.suites.lifeplanner.cases.wording import list_words, or_words
from geoeval.suites.lifeplanner.city.opening_hours import DAYS
from geoeval.suites.lifeplanner.city.vocabulary import CATEGORIES, LONG_MEM_VOCAB, PROFILE_OF, SHORT_MEM_VOCAB
from geoeval.suites.lifeplanner.scoring.answers import ref_block
from geoeval.suites.lifeplanner.tools.trip_timing import boundary_margin, minute_to_hhmm, open_at_minute


class PlaceCases(RouteSteps):
    """The Place Perception generators."""

    def place_l0(self) -> dict[str, Any]:
        kind = self.pick(["opentime_week", "opentime_week", "rating", "cost", "address", "tag"])
        p = self.pick(self.idx.unique_named)
        persona = self.persona()
        if kind == "opentime_week":
            if not p.hours:
                raise Reject("hours not available")
            q = self.pick(
                [
                    f"What are the opening hours of {p.name}?",
                    f"{persona}When is {p.name} open during the week?",
                    f"Could you tell me the business hours of {p.name}?",
                ]
            )
        elif kind == "rating":
            if p.rating is None:
                raise Reject("no rating")
            q = self.pick([f"What rating does {p.name} have?", f"{persona}How well rated is {p.name}?"])
        elif kind == "cost":
            if p.cost is None:
                raise Reject("no cost")
            q = self.pick(
                [
                    f"How much does {p.name} cost per person?",
                    f"{persona}What's the average spend per person at {p.name}?",
                ]
            )
        elif kind == "address":
            q = self.pick([f"What is the address of {p.name}?", f"{persona}Where exactly is {p.name}?"])
        else:
            own = p.tag_facts
            cat = next((c for c in CATEGORIES if c.place_type == p.place_type), None)
            if cat is None:  # a real (OSM) place type outside the synthetic vocabulary
                raise Reject("no tag vocabulary for the place type")
            vocab = [f"tag:{k}:{v}" for k, vs in cat.tags for v in vs]
            missing = [f for f in vocab if f.split(":", 2)[2].casefold() not in p.tag.casefold()]
            want = self.chance(0.5)
            pool = own if want else missing
            if not pool:
                raise Reject("no tag to ask about")
            fact = self.pick(pool)
            value = fact.split(":", 2)[2]
            q = self.pick(
                [f"Does {p.name} have {value.lower()}?", f"{persona}Can I expect {value.lower()} at {p.name}?"]
            )
        self.only_place_named(p)
        self.find_place(p)
        if kind in ("rating", "cost"):
            value_out: Any = self.d.results[-1].payload["results"][0][kind]
            key = kind
        else:
            det = self.d.call("place_detail", place_id=p.id)
            if kind == "tag":
                value_out = value.casefold() in det["tag"].casefold()
                key = f"tag:{value}"
            else:
                value_out = det[kind]
                key = kind
        self.d.need(f"place:{p.id}:{'tag' if kind == 'tag' else kind}")
        return dict(
            signature=("place_l0", p.id, kind, key),
            question=q.strip(),
            answer={"answer": value_out, "ref": ref_block("l0", [key], [], notes_field=True)},
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["value", "==", value_out]]}],
            constraints=[],
            reference_places=[p.id],
            reference_order=[],
            context={"kind": kind, "place": p.id},
        )

    def _neighbours(self, p: Place, pool: list[Place], k: int, max_d: float = 1500.0) -> list[Place]:
        others = [o for o in pool if o.id != p.id]
        ds = self.idx.distances(p, others)
        order = sorted((float(d), o.id, o) for d, o in zip(ds, others) if d <= max_d)
        return [o for _, _, o in order[:k]]

    def _social_verdict(self, persona: str) -> dict[str, Any]:
        """Place L1 that only social-media posts answer (Figure 1: "Is Boyi Optical an authorized
        Zeiss store ...? True", grounded in a note): does a named place have a stated memory
        fact? Yes: a note names the place exactly and states it (τ*: the search that finds it and
        the note). No: the place has no fact meaning it (both ways, `lexicon.STEMS`) and the
        data engine's note search for the place and the value finds nothing."""
        p = self.pick(self.idx.unique_named)
        want = self.chance(0.5)
        own = sorted(f for f in p.facts if f.startswith(("long:", "short:")))
        if want:
            fact = self.pick(own)
            note, keyword, hits = self.findable_note(p, fact)
        else:
            profile = PROFILE_OF.get(p.place_type, "shop")
            vocab = [
                f"{src}:{k}:{v}"
                for src, table in (("long", LONG_MEM_VOCAB), ("short", SHORT_MEM_VOCAB))
                for k, entries in table
                for v, profiles in entries
                if profile in profiles.split()
            ]
            fact = self.pick([f for f in vocab if f not in p.facts])
            meaning = [pref for pref in (*PREFERENCES, *DISLIKES) if fact in pref.facts]
            if any(self.satisfies(p, pref) for pref in meaning):
                raise Reject("the place has a fact that means the same")
            value = fact.split(":", 2)[2]
            keyword = f'"{p.name}" AND "{value}"'
            if '"' in value or self.de("search_notes", keyword=keyword)["results"]:
                raise Reject("a note about the place mentions the value")
            note, hits = None, []
        key, value = fact.split(":", 2)[1:]
        if key == "Atmosphere":
            q = f"{persona}Is {p.name} {value}, according to social-media posts?"
        else:
            q = self.pick(
                [
                    f"{persona}Do social-media posts about {p.name} mention {value}?",
                    f"I saw something online. Do people's posts about {p.name} mention {value}?",
                ]
            )
        self.only_place_named(p)
        self.find_place(p)
        self.d.call("search_notes", keyword=keyword)
        if note:
            self.d.call("note_detail", note_id=note)
            self.d.need(f"note:{note}")
        return dict(
            signature=("place_l1", "social_verdict", p.id, fact),
            question=q.strip(),
            answer={
                "answer": want,
                "reason": (f"A post about {p.name} says so." if want else f"No post about {p.name} mentions {value}."),
                "ref": ref_block("l1", [], hits if want else [], notes_field=True),
            },
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["value", "==", want]]}],
            constraints=[
                {
                    "kind": "value_equals",
                    "expected": want,
                    "text": f"The verdict follows what posts about {p.name} say about {value}.",
                }
            ],
            reference_places=[p.id],
            reference_order=[],
            context={"kind": "social_verdict", "fact": fact},
        )

    def place_l1(self) -> dict[str, Any]:
        kinds = ["open_verdict", "open_verdict", "compare", "which_open"]
        kind = self.pick(kinds + ["social_verdict"] * 2 if self.l1_social else kinds)
        persona = self.persona()
        if kind == "social_verdict":
            return self._social_verdict(persona)
        if kind == "open_verdict":
            return self._open_verdict(persona)
        return self._choice_among_named(kind, persona)

    def _open_verdict(self, persona: str) -> dict[str, Any]:
        """Place L1: is a named place open on a stated day at a stated time?"""
        p = self.pick([x for x in self.idx.unique_named if x.hours])
        h = self.idx.hours_of(p)
        want = self.chance(0.5)
        for _ in range(40):
            wd, t = self.weekday_time(7 * 60, 23 * 60 + 30)
            if open_at_minute(h, wd, t) == want and boundary_margin(h, wd, t) >= 20:
                break
        else:
            raise Reject("no time with the wanted verdict")
        day, hhmm = DAYS[wd], minute_to_hhmm(t)
        q = self.pick(
            [
                f"{persona}I'll pass by {p.name} on {day} at {hhmm}. Will it be open?",
                f"Is {p.name} open on {day} at {hhmm}?",
                f"{persona}Can I still go to {p.name} at {hhmm} on a {day}?",
            ]
        )
        self.only_place_named(p)
        self.find_place(p)
        self.d.call("place_detail", place_id=p.id)
        self.d.need(f"place:{p.id}:opentime_week")
        verdict = bool(open_at_minute(h, wd, t))
        return dict(
            signature=("place_l1", "open_verdict", p.id, wd, t),
            question=q.strip(),
            answer={
                "answer": verdict,
                "reason": f"{p.name} opens {p.hours}; on {day} at {hhmm} it is {'open' if verdict else 'closed'}.",
                "ref": ref_block("l1", ["opentime_week"], [], notes_field=True),
            },
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["value", "==", verdict]]}],
            constraints=[
                {
                    "kind": "value_equals",
                    "expected": verdict,
                    "text": f"The verdict follows {p.name}'s opening hours on {day} at {hhmm}.",
                }
            ],
            reference_places=[p.id],
            reference_order=[],
            context={"kind": "open_verdict", "weekday": day, "time": hhmm},
        )

    def _choice_among_named(self, kind: str, persona: str) -> dict[str, Any]:
        """Place L1: which of two or three named places of one type near each other has the
        best rating or the lowest cost (`compare`), or is the only one open at a stated time
        (`which_open`)."""
        sub = self.pick(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 3))
        pool = [x for x in self.idx.unique_named if x.sub == sub]
        p = self.pick(pool)
        n = 3 if self.chance(0.7) else 2
        group = [p, *self._neighbours(p, pool, n - 1)]
        if len(group) < n:
            raise Reject("not enough neighbours")
        group = [group[i] for i in self.rng.permutation(len(group))]
        names = [g.name for g in group]
        noun_pl = TYPE_NOUNS[sub][1]
        if kind == "compare":
            attr = self.pick(["rating", "cost"])
            vals = [getattr(g, attr) for g in group]
            if any(v is None for v in vals):
                raise Reject("missing values")
            best_val = max(vals) if attr == "rating" else min(vals)
            ranked = sorted(vals, reverse=attr == "rating")
            if abs(ranked[0] - ranked[1]) < (0.2 if attr == "rating" else 5):
                raise Reject("too close to call")
            winner = group[vals.index(best_val)]
            if attr == "rating":
                q = self.pick(
                    [
                        f"{persona}Between {list_words(names)}, which one has the best rating?",
                        f"Which is rated highest: {or_words(names)}?",
                    ]
                )
                req = ["rating", ">=", best_val]
            else:
                q = self.pick(
                    [
                        f"{persona}Which is cheapest per person: {or_words(names)}?",
                        f"I'm on a budget. Among {list_words(names)}, which costs the least per person?",
                    ]
                )
                req = ["cost", "<=", best_val]
            for g in group:
                self.only_place_named(g)
            for g in group:
                self.find_place(g)
                self.d.need(f"place:{g.id}:{attr}")
            reason = f"{winner.name} has the {'highest rating' if attr == 'rating' else 'lowest cost'} ({best_val:g})."
            keys = [attr]
        else:  # which_open
            hs = [self.idx.hours_of(g) for g in group]
            if any(not h.known for h in hs):
                raise Reject("unknown hours")
            wd, t, opens = self.time_when_exactly_one_is_open(hs, earliest=6 * 60, margin=20)
            winner = group[opens.index(True)]
            day, hhmm = DAYS[wd], minute_to_hhmm(t)
            q = self.pick(
                [
                    f"{persona}It's {day}, {hhmm}. Which of {list_words(names)} is open right now?",
                    f"Which of these {noun_pl} can I still visit on {day} at {hhmm}: {list_words(names)}?",
                ]
            )
            req = ["opentime_week", "open_at", [day, hhmm]]
            for g in group:
                self.only_place_named(g)
            for g in group:
                self.find_place(g)
                self.d.call("place_detail", place_id=g.id)
                self.d.need(f"place:{g.id}:opentime_week")
            reason = f"Only {winner.name} is open on {day} at {hhmm} ({winner.hours})."
            keys = ["opentime_week"]
        cands = [g.id for g in group]
        return dict(
            signature=("place_l1", kind, tuple(sorted(cands)), str(req)),
            question=q.strip(),
            answer={"answer": winner.name, "reason": reason, "ref": ref_block("l1", keys, [], notes_field=True)},
            implicit_logic=False,
            requirements=[{"scope": "answer_place", "requirements": [req, ["place_id", "in", cands]]}],
            constraints=[
                {
                    "kind": "place_requirement",
                    "role": "answer_place",
                    "requirement": req,
                    "text": f"The chosen place satisfies {req[0]} {req[1]} {req[2]}.",
                },
                {
                    "kind": "place_requirement",
                    "role": "answer_place",
                    "requirement": ["place_id", "in", cands],
                    "text": f"The chosen place is one of {list_words(names)}.",
                },
            ],
            reference_places=[winner.id],
            reference_order=[],
            context={"kind": kind, "candidates": cands},
        )

    def place_l2(self) -> dict[str, Any]:
        return self._place_l2_paper() if self.paper else self._place_l2_explicit()

    def _place_l2_paper(self) -> dict[str, Any]:
        """Figure 1's Place L2 ("... I absolutely hate mosquitoes. Which cafe should I choose?"):
        the query names the type and where the user is, never the candidates or a radius. The
        candidates are every place of the type near the anchor (`area_radius`)."""
        pref = self.pick(PREFERENCES)
        a = self.pick([p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS])
        named = [p for p in self.idx.unique_named if p.sub != a.sub]
        ds = self.idx.distances(a, named)
        anchor = self.pick([p for p, d in zip(named, ds) if 30.0 <= d <= 250.0])
        d_a = float(self.idx.distances(anchor, [a])[0])
        same = [p for p in self.idx.by_sub[a.sub] if p.id != anchor.id]
        radius = self.area_radius(anchor, d_a, same)
        cands, _ = self.within(anchor, same, radius)
        if not 2 <= len(cands) <= 8:
            raise Reject("candidate set not clean")
        dislike = self.pick(DISLIKES) if self.chance(0.5) else None
        if dislike and self.satisfies(a, dislike):
            raise Reject("the answer has the dislike")
        trap = [c for c in cands if c.id != a.id and self.satisfies(c, pref) and dislike and self.satisfies(c, dislike)]
        if dislike and not trap:
            raise Reject("no distractor with the dislike")
        self.only_place_named(anchor)
        if self.fitting_in_area(anchor.id, radius, pref, dislike, [a.sub]) != [a.id]:
            raise Reject("the full records do not single out the answer")
        noun = TYPE_NOUNS[a.sub][0]
        need = self.pick(pref.phrases)
        dis = ""
        if dislike:
            phrase = self.pick(dislike.phrases)
            dis = f", and {phrase[0].lower()}{phrase[1:]}"
        q = self.pick(
            [
                f"{self.persona()}I'm near {anchor.name}. {need[0].upper()}{need[1:]}{dis}. "
                f"Which {noun} should I choose?",
                f"{need[0].upper()}{need[1:]}{dis}. Which {noun} around {anchor.name} should I go to?",
            ]
        )
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=[a.sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(c.id for c in cands) or out["returned"] != len(cands):
            raise Reject("nearby_search lists another candidate set")
        ordered = [self.idx.by_id[i] for i in listed]
        keys, notes = self.show_preference(a, pref, [c for c in ordered if c.id != a.id])
        if dislike:
            self.show_dislike(trap[0], dislike)
        ids = [c.id for c in cands]
        constraints = [
            {
                "kind": "has_preference",
                "role": "answer_place",
                "facts": list(pref.facts),
                "text": f"The chosen place fits the need: {need}.",
            },
            {
                "kind": "place_requirement",
                "role": "answer_place",
                "requirement": ["place_type", "contains", a.sub],
                "text": f"The chosen place is a {noun}.",
            },
            {
                "kind": "within_radius",
                "role": "answer_place",
                "center": anchor.id,
                "radius_m": radius,
                "text": f"The chosen place is near {anchor.name} (within {radius} m).",
            },
        ]
        if dislike:
            constraints.append(
                {
                    "kind": "lacks_preference",
                    "role": "answer_place",
                    "facts": list(dislike.facts),
                    "text": f"The chosen place avoids what the user dislikes ({dislike.phrases[0]}).",
                }
            )
        return dict(
            signature=("place_l2", a.id, pref.key, anchor.id),
            question=q.strip(),
            answer={
                "answer": a.name,
                "reason": f"{a.name} is the only {noun} near {anchor.name} whose {'tags' if keys else 'posts'} "
                f"show it fits: {need}.",
                "ref": ref_block("l2", keys, notes, notes_field=True),
                "implicit_logic": "True",
            },
            implicit_logic=True,
            requirements=[{"scope": "answer_place", "requirements": [["place_id", "in", ids]]}],
            constraints=constraints,
            reference_places=[a.id],
            reference_order=[],
            context={
                "kind": "preference",
                "preference": pref.key,
                "dislike": dislike.key if dislike else None,
                "candidates": ids,
                "anchor": anchor.id,
                "radius_m": radius,
                "phrasing": "paper",
            },
        )

    def _place_l2_explicit(self) -> dict[str, Any]:
        pref = self.pick(PREFERENCES)
        holders = [p for p in self.idx.unique_named if self.satisfies(p, pref)]
        a = self.pick(holders)
        pool = [x for x in self.idx.unique_named if x.sub == a.sub]
        dislike = None
        others: list[Place] = []
        near = self._neighbours(a, pool, 8)
        if self.chance(0.5):
            dislike = self.pick(DISLIKES)
            if self.satisfies(a, dislike):
                raise Reject("the answer has the dislike")
            trap = [o for o in near if self.satisfies(o, pref) and self.satisfies(o, dislike)]
            if not trap:
                raise Reject("no distractor with the dislike")
            others.append(trap[0])
        plain = [o for o in near if not self.satisfies(o, pref) and o not in others]
        n_plain = 1 if others else int(self.pick([1, 2]))
        if len(plain) < n_plain:
            raise Reject("no plain candidates")
        others += plain[:n_plain]
        group = [a, *others]
        group = [group[i] for i in self.rng.permutation(len(group))]
        names = [g.name for g in group]
        # Figure 10: verify with the full records that a is the only candidate that fits
        for g in group:
            self.only_place_named(g)
            facts = self.de_facts(g)
            fits = any(f in facts for f in pref.facts) and not (dislike and any(f in facts for f in dislike.facts))
            if fits != (g.id == a.id):
                raise Reject("the memory check does not single out the answer")
        noun = TYPE_NOUNS.get(a.sub, (a.sub.lower(), ""))[0]
        need = self.pick(pref.phrases)
        dis = ""
        if dislike:
            phrase = self.pick(dislike.phrases)
            dis = f", and {phrase[0].lower()}{phrase[1:]}"
        q = self.pick(
            [
                f"{self.persona()}{need[0].upper()}{need[1:]}{dis}. Which {noun} should I choose: {or_words(names)}?",
                f"{need[0].upper()}{need[1:]}{dis}. Between {list_words(names)}, where should I go?",
            ]
        )
        for g in group:
            self.find_place(g)
        keys, notes = self.show_preference(a, pref, others)
        if dislike:
            self.show_dislike(others[0], dislike)
        cands = [g.id for g in group]
        constraints = [
            {
                "kind": "has_preference",
                "role": "answer_place",
                "facts": list(pref.facts),
                "text": f"The chosen place fits the need: {need}.",
            },
            {
                "kind": "place_requirement",
                "role": "answer_place",
                "requirement": ["place_id", "in", cands],
                "text": f"The chosen place is one of {list_words(names)}.",
            },
        ]
        if dislike:
            constraints.append(
                {
                    "kind": "lacks_preference",
                    "role": "answer_place",
                    "facts": list(dislike.facts),
                    "text": f"The chosen place avoids what the user dislikes ({dislike.phrases[0]}).",
                }
            )
        return dict(
            signature=("place_l2", a.id, pref.key, tuple(sorted(cands))),
            question=q.strip(),
            answer={
                "answer": a.name,
                "reason": f"{a.name} is the only one whose {'tags' if keys else 'posts'} show it fits: {need}.",
                "ref": ref_block("l2", keys, notes, notes_field=True),
                "implicit_logic": "True",
            },
            implicit_logic=True,
            requirements=[{"scope": "answer_place", "requirements": [["place_id", "in", cands]]}],
            constraints=constraints,
            reference_places=[a.id],
            reference_order=[],
            context={
                "kind": "preference",
                "preference": pref.key,
                "dislike": dislike.key if dislike else None,
                "candidates": cands,
            },
        )
