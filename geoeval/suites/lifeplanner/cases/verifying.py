"""Verifying with the data-engine toolset (Table 8: full records with memory, `social_mem`
filters) that the answer is the only one a query admits; the calls are kept as the case's
`engine_path`. Also the evidence notes a keyword search finds."""

from __future__ import annotations

from typing import Any

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.choosing import ChoosingSteps
from geoeval.suites.lifeplanner.cases.city_index import Place, norm_name
from geoeval.suites.lifeplanner.cases.lexicon import TYPES_MEANING, Preference
from geoeval.suites.lifeplanner.scoring.judging import parse_fact_groups
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools


class VerifyingSteps(ChoosingSteps):
    """Data-engine calls that check a case's answer is unique."""

    def de(self, tool: str, **arguments: Any) -> Any:
        """One data-engine call (Table 8), recorded in the case's engine_path."""
        fns = {
            "place_search": place_tools.place_search,
            "nearby_search": nearby_tools.nearby_search,
            "search_notes": note_tools.search_notes,
            "multi_stop_routing": routing_tools.multi_stop_routing,
            "place_detail": place_tools.place_detail,
        }
        kwargs = dict(arguments)
        if tool in ("place_search", "nearby_search", "search_notes"):
            kwargs["toolset"] = "data_engine"
        res = fns[tool](self.city, **kwargs)
        self.d.engine_path.append({"tool": tool, "arguments": arguments, "failure_class": res.failure_class})
        if res.failure_class == "parameter_error":
            raise Reject(f"data-engine call {tool} failed: {res.error}")
        return res.payload

    def only_place_named(self, p: Place) -> None:
        """Figure 10's uniqueness check for a place the query names: one exact name match."""
        res = self.de("place_search", query_name=p.name)
        exact = [r["place_id"] for r in res["results"] if norm_name(r["name"]) == norm_name(p.name)]
        if exact != [p.id]:
            raise Reject(f"{p.name!r} does not name one place")

    def only_fitting_place(
        self, center: Any, radius: float, place_type: str, pref: Preference, answer: Place, reason: str
    ) -> None:
        """Figure 10's uniqueness check within a stated area of one type: the data engine's memory
        (`social_mem`) and tag searches for `pref` find `answer` and nothing else (else reject
        with `reason`)."""
        mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
        tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
        found: set[str] = set()
        for key, values in (("social_mem", mem), ("geo_tag", tags)):
            if values:
                area = {
                    "center": dict(center) if isinstance(center, dict) else center,
                    "radius_meters": radius,
                    "place_types": [place_type],
                }
                found |= {r["place_id"] for r in self.de("nearby_search", **area, **{key: values})["results"]}
        if found != {answer.id}:
            raise Reject(reason)

    def de_facts(self, p: Place) -> frozenset[str]:
        """A place's facts as the data engine reads them (full record with memory)."""
        res = self.de("place_search", query_name=p.name)
        rec = next((r for r in res["results"] if r["place_id"] == p.id), None)
        if rec is None:
            raise Reject("the data engine cannot find the place")
        return frozenset(
            parse_fact_groups(rec["tag"], "tag")
            | parse_fact_groups(rec["long_mem"], "long")
            | parse_fact_groups(rec["short_mem"], "short")
        )

    def findable_note(self, p: Place, fact: str) -> tuple[str, str, list[str]]:
        """An evidence note of `fact` about `p` that a keyword search finds: (note_id, keyword, every
        evidence note of the fact that search returns). Figure 10: without one, discard the place."""
        value = fact.split(":", 2)[2]
        exact = [n for n, kind in self.idx.evidence.get((p.id, fact), []) if kind == "exact"]
        if not exact or '"' in value:
            raise Reject("no note names the place exactly while stating the fact")
        keyword = f'"{p.name}" AND "{value}"'
        found = [r["note_id"] for r in self.de("search_notes", keyword=keyword)["results"]]
        evidence = {n for n, _ in self.idx.evidence[(p.id, fact)]}
        hits = [n for n in found if n in evidence]
        if exact[0] not in hits:
            raise Reject("the evidence note is not among the search results")
        return exact[0], keyword, hits

    def record_facts(self, rec: dict[str, Any]) -> frozenset[str]:
        return frozenset(
            parse_fact_groups(rec.get("tag"), "tag")
            | parse_fact_groups(rec.get("long_mem"), "long")
            | parse_fact_groups(rec.get("short_mem"), "short")
        )

    def fitting_in_area(
        self,
        center: str | dict[str, Any],
        radius: float,
        pref: Preference,
        dislike: Preference | None = None,
        place_types: list[str] | None = None,
    ) -> list[str]:
        """Figure 10's uniqueness check for an area the query only implies: every place (of
        `place_types`, else of any type) within `radius` of `center` whose full record (memory
        included) fits `pref` and has none of `dislike`'s facts."""
        args: dict[str, Any] = {"center": center, "radius_meters": radius}
        if place_types:
            args["place_types"] = place_types
        records: dict[str, dict[str, Any]] = {}
        mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
        tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
        for key, values in (("social_mem", mem), ("geo_tag", tags)):
            if not values:
                continue
            res = self.de("nearby_search", **args, **{key: values})
            if res["total_matched"] > res["returned"]:
                raise Reject("more places match than the data engine returns")
            records.update({r["place_id"]: r for r in res["results"]})
        kinds = [t for t in TYPES_MEANING.get(pref.key, ()) if not place_types or t in place_types]
        if kinds:  # places that fit by their type alone
            res = self.de("nearby_search", **{**args, "place_types": kinds})
            if res["total_matched"] > res["returned"]:
                raise Reject("more places match than the data engine returns")
            records.update({r["place_id"]: {**r, "_fits_by_type": True} for r in res["results"]})
        out = []
        for pid, rec in sorted(records.items(), key=lambda kv: kv[1].get("distance_m", 0)):
            facts = self.record_facts(rec)
            fits = rec.get("_fits_by_type") or any(f in facts for f in pref.facts)
            if fits and not (dislike and any(f in facts for f in dislike.facts)):
                out.append(pid)
        return out
