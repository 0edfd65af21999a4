"""Meaning-preserving rewordings of case queries, offline and deterministic (issue 11).

A robustness check for agents that might lean on the case engine's templates: `paraphrase(q)`
rewrites the template's fixed wording ("What are the opening hours of X?" -> "When does X open
and close?", "within 300 m of X" -> "no more than 300 metres from X") and keeps every name,
number, time, weekday and stated constraint, so the case's unique answer is unchanged
(`phrasing.accept_rewrite` holds for every rewrite; a test checks it). Rules that do not match
leave the question as it is; `paraphrase_cases` reports how many changed.

The rules were written from general English, not from any agent: they are the wordings a user
could equally have chosen. They are not exhaustive, so a paraphrased run is a lower bound on how
much an agent depends on the templates.
"""

from __future__ import annotations

import re
from typing import Any

from geoeval.suites.lifeplanner.phrasing import accept_rewrite

_N = r"(?P<n>[A-Z][^?]*?)"  # a place name: starts capitalised, no question mark
_T = r"(?P<t>\d{1,2}:\d{2})"
_D = r"(?P<d>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"

# (pattern, replacement), applied in order, each at most once per question
RULES: tuple[tuple[str, str], ...] = (
    (rf"What are the opening hours of {_N}\?", r"When does \g<n> open and close?"),
    (rf"Could you tell me the business hours of {_N}\?", r"What times is \g<n> open?"),
    (rf"When is {_N} open during the week\?", r"Over the week, when can I visit \g<n>?"),
    (rf"What rating does {_N} have\?", r"How many stars does \g<n> get?"),
    (rf"How well rated is {_N}\?", r"What review score does \g<n> have?"),
    (rf"How much does {_N} cost per person\?", r"What's the typical price per head at \g<n>?"),
    (rf"What's the average spend per person at {_N}\?", r"Roughly how much would one person pay at \g<n>?"),
    (rf"What is the address of {_N}\?", r"Where can I find \g<n>? I need the street address."),
    (rf"Where exactly is {_N}\?", r"Which street address does \g<n> have?"),
    (rf"Does {_N} have (?P<v>[^?]+)\?", r"Is there \g<v> at \g<n>?"),
    (rf"Can I expect (?P<v>[^?]+) at {_N}\?", r"Will I find \g<v> at \g<n>?"),
    (
        rf"I'll pass by {_N} on {_D} at {_T}\. Will it be open\?",
        r"On \g<d> at \g<t> I'll be walking past \g<n>. Is it open then?",
    ),
    (rf"Is {_N} open on {_D} at {_T}\?", r"Will \g<n> be open at \g<t> on \g<d>?"),
    (rf"Can I still go to {_N} at {_T} on a {_D}\?", r"Is \g<n> still open at \g<t> on a \g<d>?"),
    (r"Between (?P<l>.+?), which one has the best rating\?", r"Of \g<l>, which gets the best reviews?"),
    (r"Which is rated highest: (?P<l>.+?)\?", r"\g<l>: which has the highest review score?"),
    (r"Which is cheapest per person: (?P<l>.+?)\?", r"\g<l>: which would cost me the least per person?"),
    (
        r"I'm on a budget\. Among (?P<l>.+?), which costs the least per person\?",
        r"Money is tight. Of \g<l>, which is the least expensive per head?",
    ),
    (r"Which (?P<k>[a-z][a-z -]+?) are within (?P<r>\d+) m of ", r"Name all the \g<k> no more than \g<r> metres from "),
    (
        r"List every (?P<k>[a-z][a-z -]+?) within (?P<r>\d+) metres of ",
        r"Give me all of the \g<k> places within \g<r> m of ",
    ),
    (r"Are there any (?P<k>[a-z][a-z -]+?) within (?P<r>\d+) m\?", r"Any \g<k> at most \g<r> m away?"),
    (r"that is rated at least (?P<x>\d(?:\.\d)?)", r"that has a rating of \g<x> or more"),
    (r"rated at least (?P<x>\d(?:\.\d)?)", r"with a rating of \g<x> or better"),
    (r"no more than (?P<c>\d+) CNY per person", r"costing \g<c> CNY or less per person"),
    (r"\(at most (?P<r>\d+) m away\)", r"(no further than \g<r> m)"),
    (
        r"What's the (?P<a>fastest|quickest) (?P<v>driving|cycling|walking) route from ",
        r"How do I get, \g<v> as quickly as possible, from ",
    ),
    (
        r"What's the (?P<a>shortest|shortest-distance) (?P<v>driving|cycling|walking) route from ",
        r"Which \g<v> route covers the least distance from ",
    ),
    (
        r"Which route is (?P<a>fastest|quickest), and how long is it\?",
        r"How do I get there in the least time, and how long does it take?",
    ),
    (
        r"Which route is (?P<a>shortest|shortest-distance), and how long is it\?",
        r"Which way has the least distance, and how long is it?",
    ),
    (r"What's the (?P<a>fastest|quickest) plan\?", r"Plan it so it takes as little time as possible."),
    (r"What's the (?P<a>shortest|shortest-distance) plan\?", r"Plan it with the least distance travelled."),
    (r"and want to visit (?P<l>.+?)\. ", r"and would like to call at \g<l> along the way. "),
    (
        (
            r"I'm leaving at (?P<t>\d{1,2}:\d{2}) on (?P<d>\w+day) and will spend about (?P<m>\d+) minutes at each stop; "
            r"every place has to be open when I get there\."
        ),
        r"Departure is \g<t> on \g<d>; I'll stay around \g<m> minutes per stop, and each place must be open on my arrival.",
    ),
    (r"I have to stop at (?P<x>.+?) before (?P<y>.+?)\.", r"\g<x> must come before \g<y>."),
    (r"Which (?P<k>[a-z][a-z -]+?) should I choose\?", r"What \g<k> would you recommend?"),
    (r" Where should I go\?", r" Any suggestions for me?"),
    (r"I'm near (?P<n>[A-Z][^.]*?) and ", r"I'm close to \g<n>, and "),
)
_COMPILED = tuple((re.compile(p), r) for p, r in RULES)


def paraphrase(question: str) -> str:
    """`question` reworded by every matching rule; unchanged when a rewrite would lose a
    protected token (a name, number, time or weekday)."""
    out = question
    for pattern, repl in _COMPILED:
        out = pattern.sub(repl, out, count=1)
    return out if accept_rewrite(question, out) else question


def paraphrase_cases(cases: list[Any]) -> tuple[list[str], int]:
    """(the paraphrased questions, how many differ from their template)."""
    qs = [paraphrase(c.question) for c in cases]
    return qs, sum(q != c.question for c, q in zip(cases, qs))
