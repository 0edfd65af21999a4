"""Route metrics (appendix C.1) against hand-computed values."""

import pytest

from geoeval.suites.maptab.metrics import (
    difficulty_score,
    ds,
    ema,
    extract_route,
    looks_like_route,
    pma,
    similarity,
    split_route,
    station_match,
)

REF = "Alpha Park-Bravo Street-Charlie Cross-Delta Hill-Echo Square"


def test_split_route_splits_on_hyphen_without_stripping():
    assert split_route("A - B-C") == ["A ", " B", "C"]
    assert split_route("") == [""]


def test_similarity_ignores_case_and_surrounding_spaces():
    assert similarity("  ALPHA park ", "alpha Park") == 1.0
    # "kensett" vs "kensit": matching blocks "kens" + "t" -> 2*5/13
    assert similarity("Kensett", "Kensit") == pytest.approx(10 / 13)


def test_station_match_threshold_is_half():
    # "abcd" vs "abxy": 2*2/8 = 0.5 -> a match; "abcd" vs "axyz": 2/8 -> no match
    assert station_match("abcd", "abxy")
    assert not station_match("abcd", "axyz")


def test_station_match_transfer_needs_exact_text_in_metromap_only():
    assert station_match("Bravo Street(transfer)", "Bravo Street(transfer)")
    assert not station_match("bravo street(transfer)", "Bravo Street(transfer)")
    assert not station_match("Bravo Street", "Bravo Street(transfer)")
    # Travelmap has no transfer rule: similarity 2*12/(12+22) = 0.706 -> match
    assert station_match("Bravo Street", "Bravo Street(transfer)", "travelmap")


def test_ema_exact_and_spelling_error():
    assert ema(REF, [REF]) == 1.0
    # "Charlie Cros" vs "Charlie Cross": similarity 24/25 -> still the same station
    assert ema("Alpha Park-Bravo Street-Charlie Cros-Delta Hill-Echo Square", [REF]) == 1.0


def test_ema_length_and_wrong_station():
    assert ema("Alpha Park-Bravo Street-Charlie Cross-Delta Hill", [REF]) == 0.0
    assert ema("Alpha Park-Bravo Street-Zulu Quay-Delta Hill-Echo Square", [REF]) == 0.0


def test_ema_missing_or_extra_transfer_fails():
    ref = "Alpha Park-Bravo Street(transfer)-Charlie Cross"
    assert ema("Alpha Park-Bravo Street(transfer)-Charlie Cross", [ref]) == 1.0
    assert ema("Alpha Park-Bravo Street-Charlie Cross", [ref]) == 0.0
    assert ema("Alpha Park-Bravo Street(transfer)-Charlie Cross", ["Alpha Park-Bravo Street-Charlie Cross"]) == 0.0
    # the same route is fine in Travelmap, where transfers are not annotated
    assert ema("Alpha Park-Bravo Street-Charlie Cross", [ref], "travelmap") == 1.0


def test_ema_any_reference_counts():
    other = "Alpha Park-Foxtrot Lane-Echo Square"
    assert ema(other, [REF, other]) == 1.0
    assert ema(other, REF) == 0.0  # a single string is one reference


def test_pma_prefix_three_of_five():
    response = "Alpha Park-Bravo Street-Charlie Cross-Zulu Quay-Echo Square"
    assert pma(response, [REF]) == 0.6
    assert ema(response, [REF]) == 0.0


def test_pma_best_over_references_and_rounding():
    refs = ["Alpha Park-Zulu Quay-Echo Square", REF]
    assert pma("Alpha Park-Bravo Street-Charlie Cross-Delta Hill", refs) == 0.8
    assert pma("Alpha Park-Bravo Street-Yankee Row", ["Alpha Park-Bravo Street-Charlie Cross"]) == 0.6667
    assert pma("Zulu Quay-Alpha Park", [REF]) == 0.0


def test_pma_uses_similarity_only_like_the_authors():
    # a missing "(transfer)" does not cut the prefix: "Bravo Street" ~ "Bravo Street(transfer)"
    ref = "Alpha Park-Bravo Street(transfer)-Charlie Cross"
    assert pma("Alpha Park-Bravo Street-Charlie Cross", [ref]) == 1.0


def test_pma_longer_response_is_capped_by_reference():
    assert pma(REF + "-Foxtrot Lane", [REF]) == 1.0


def test_difficulty_scores_and_ds():
    assert [difficulty_score(x) for x in ("Easy", "medium", "HARD")] == [1, 2, 3]
    with pytest.raises(ValueError):
        difficulty_score("Extreme")
    assert ds(1.0, "Hard", "Medium") == 5
    assert ds(1.0, "Easy", "Easy") == 2
    assert ds(0.0, "Hard", "Hard") == 0
    assert ds(1.0, "Hard", "unknown") == 0  # the authors' evaluator scores unknown levels 0
    assert sum(ds(e, "Medium", q) for e, q in [(1, "Easy"), (0, "Hard"), (1, "Hard")]) == 3 + 5


def test_extract_route_from_chatty_answers():
    assert extract_route("Let me think.\nThe route is:\nA Park-B Street(transfer)-C Cross") == (
        "A Park-B Street(transfer)-C Cross"
    )
    assert extract_route("```\nA Park-B Street\n```\nDone - bye") == "A Park-B Street"
    assert extract_route("**Route:** A Park-B Street.") == "A Park-B Street"
    assert extract_route("<route_begin>A-B<route_end>\n<Total_Time_begin>3<Total_Time_end>") == "A-B"
    assert extract_route("I cannot find a route.") == ""
    assert extract_route("") == ""


def test_extract_route_ignores_prose_with_a_dash():
    """Issue 11: "That has 2 transfers - none" was taken for a route; prose lines are skipped."""
    chatty = "The route is Marlow Park-Dunthorpe(transfer)-Quillon.\nThat has 2 transfers - none"
    assert extract_route(chatty) == "Marlow Park-Dunthorpe(transfer)-Quillon"
    assert (
        extract_route("The optimal route is Kensett Square-Ashby Vale-Quillon.") == "Kensett Square-Ashby Vale-Quillon"
    )
    assert extract_route("I'm sorry - I cannot tell from this map.") == ""
    assert extract_route("A fewest-station route exists.") == ""
    assert extract_route("So the answer: West 65th_Lorain-Triskett") == "West 65th_Lorain-Triskett"
    assert extract_route("凯恩塞特广场-红线站") == "凯恩塞特广场-红线站"
    assert not looks_like_route("Take the Red Line - it is quicker")
    assert looks_like_route("Isle of Dogs-The Hague Centraal-Bank(transfer)-St. James Park")
    assert looks_like_route("No. 2 Middle School-People's Square(transfer)-Line I Terminal")
