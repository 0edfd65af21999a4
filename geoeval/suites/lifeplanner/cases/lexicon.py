"""The words the case engine phrases queries with (section 3.2, Figure 10 step A4/B7): everyday
nouns for place types and what a reader takes each to cover, personas, the implicit preferences
of L2 cases, and the facts that hold only at certain times.

A `Preference` is what an L2 query implies without naming it ("it's pouring and I have no
umbrella"): a set of facts, any one of which satisfies it, written the way `note_facts.fact`
writes them (`tag:Service:Free umbrella borrowing`, `long:Atmosphere:quiet`). Facts that say the
same thing in the tag and in the memory vocabulary belong to one preference, so that uniqueness is
checked against everything the phrasing could mean. Every fact named here exists in the
vocabularies of `city/vocabulary.py` (a test checks this).
"""

from __future__ import annotations

from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Place types as people say them
# --------------------------------------------------------------------------------------------

# sub-type (the part after "|" of place_type) -> everyday nouns, singular and plural
TYPE_NOUNS: dict[str, tuple[str, str]] = {
    "Coffee House": ("coffee shop", "coffee shops"),
    "Tea House": ("tea shop", "tea shops"),
    "Chinese Restaurant": ("Chinese restaurant", "Chinese restaurants"),
    "Fast Food Restaurant": ("fast-food place", "fast-food places"),
    "Hot Pot Restaurant": ("hot pot restaurant", "hot pot restaurants"),
    "Bakery": ("bakery", "bakeries"),
    "Dessert House": ("dessert shop", "dessert shops"),
    "Barbecue Restaurant": ("barbecue restaurant", "barbecue restaurants"),
    "Pet Cafe": ("pet cafe", "pet cafes"),
    "Convenience Store": ("convenience store", "convenience stores"),
    "Supermarket": ("supermarket", "supermarkets"),
    "Bookstore": ("bookstore", "bookstores"),
    "Florist": ("florist", "florists"),
    "Optical Shop": ("optical shop", "optical shops"),
    "Pub": ("bar", "bars"),
    "KTV": ("karaoke place", "karaoke places"),
    "Gym": ("gym", "gyms"),
    "Park": ("park", "parks"),
    "Tourist Attraction": ("sightseeing spot", "sightseeing spots"),
    "Business Hotel": ("hotel", "hotels"),
    "Hostel": ("hostel", "hostels"),
    "Museum": ("museum", "museums"),
    "Library": ("library", "libraries"),
    "Pharmacy": ("pharmacy", "pharmacies"),
    "Hair Salon": ("hair salon", "hair salons"),
    "Laundry": ("laundry", "laundries"),
    "Dedicated Charging Station": ("EV charging station", "EV charging stations"),
}

# What a reader takes each noun to cover, where that is more than the sub-type it is written for
# (issue 28): a "sightseeing spot" may be a park, a "hotel" a hostel or an inn, a "Chinese
# restaurant" a hot-pot place. `TYPE_ACCEPTS[sub]`: the other sub-types a reader accepts under
# `TYPE_NOUNS[sub]`; `TYPE_BORDERLINE[sub]`: the ones a reader may or may not accept (a yakiniku
# barbecue, a burger chain, a cat cafe for "coffee shop"). A case uses such a noun only where no
# borderline place could count (`cases/second_reading.py`), so that both readings give its answer.
# `tests/lifeplanner/test_cases.py` flags a noun narrower than the category it names.
TYPE_ACCEPTS: dict[str, tuple[str, ...]] = {
    "Tourist Attraction": ("Park",),
    "Business Hotel": ("Hostel",),
    "Chinese Restaurant": ("Hot Pot Restaurant",),
}
TYPE_BORDERLINE: dict[str, tuple[str, ...]] = {
    "Chinese Restaurant": ("Barbecue Restaurant", "Fast Food Restaurant"),
    "Coffee House": ("Pet Cafe",),
}


def type_reading(sub: str) -> tuple[str, ...]:
    """The sub-types a reader accepts under the noun written for `sub` (`sub` first)."""
    return (sub, *TYPE_ACCEPTS.get(sub, ()))


def type_borderline(sub: str) -> tuple[str, ...]:
    """The sub-types a reader may or may not accept under the noun written for `sub`."""
    return TYPE_BORDERLINE.get(sub, ())


# Sub-types a user would ask to visit or find (companies, homes and hospitals are origins only).
TARGET_TYPES: tuple[str, ...] = tuple(TYPE_NOUNS)

PERSONAS: tuple[str, ...] = (
    "I'm a graduate student at Luojia Hill.",
    "I'm a mum of two.",
    "I'm visiting the city for the weekend.",
    "I just moved here for a new job.",
    "I work night shifts at the hospital.",
    "My friend and I run a small food blog.",
    "I'm a retired teacher.",
    "I'm a freelance designer.",
    "I'm a first-year undergrad.",
    "I'm in town on a business trip.",
    "I'm a photographer.",
    "I'm planning a day out with my parents.",
)

VEHICLE_VERBS = {"driving": "driving", "cycling": "cycling", "walking": "walking"}
MODE_WORDS = {"time": ("fastest", "quickest"), "distance": ("shortest", "shortest-distance")}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# --------------------------------------------------------------------------------------------
# Implicit preferences (L2)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preference:
    """An implicit need: `phrases` imply it, `facts` satisfy it (any one of them). `season`: the
    season every phrase states ("this spring"), which then is the season of the visit."""

    key: str
    phrases: tuple[str, ...]
    facts: tuple[str, ...]
    season: str | None = None

    def value_of(self, fact: str) -> str:
        return fact.split(":", 2)[2]


PREFERENCES: tuple[Preference, ...] = (
    Preference(
        "quiet",
        ("I need somewhere calm where I can hear myself think", "I want a peaceful spot without any noise"),
        ("long:Atmosphere:quiet", "tag:Rule:Quiet zone"),
    ),
    Preference(
        "study",
        (
            "I have an exam on Monday and need a spot where I can revise for hours",
            "I need somewhere to work through my thesis all afternoon",
        ),
        ("long:Atmosphere:good for studying", "tag:Facility:Study desks"),
    ),
    Preference("cozy", ("I want somewhere warm and snug to unwind",), ("long:Atmosphere:cozy",)),
    Preference("lively", ("we want a buzzing place full of energy",), ("long:Atmosphere:lively",)),
    Preference("romantic", ("it's our anniversary, so the mood has to be right",), ("long:Atmosphere:romantic",)),
    Preference(
        "family",
        ("I'm bringing my two little kids along",),
        (
            "long:Atmosphere:family-friendly",
            "tag:Facility:Kids area",
            "tag:Facility:Playground",
            "tag:Facility:Baby chairs",
            "tag:Service:Kids workshop",
        ),
    ),
    Preference("cute", ("my roommates want a cute vibe for photos",), ("long:Atmosphere:cute pink decor",)),
    Preference("music", ("I'd like gentle music playing in the background",), ("long:Atmosphere:soothing music",)),
    Preference(
        "lake_view",
        ("I'd love to look out over the water while I sit",),
        ("long:Scenery:lake view", "long:Scenery:sunset over the lake", "tag:Scenery:Lake sunset"),
    ),
    Preference(
        "rooftop",
        ("somewhere up high overlooking the city would be perfect",),
        ("long:Scenery:rooftop view", "tag:Scenery:City skyline", "tag:Facility:Viewing platform"),
    ),
    Preference(
        "sakura",
        ("I want to see the sakura this spring",),
        (
            "long:Scenery:cherry blossoms in spring",
            "tag:Scenery:Cherry blossoms",
            "short:Crowd:extremely crowded during cherry blossom season",
        ),
        season="spring",
    ),
    Preference(
        "sunset",
        ("I want to watch the sun go down over the water",),
        ("long:Scenery:sunset over the lake", "tag:Scenery:Lake sunset"),
    ),
    Preference("latte_art", ("I'm a sucker for pretty latte art",), ("long:Positive:great latte art",)),
    Preference("big_portions", ("I'm starving and want big servings",), ("long:Positive:generous portions",)),
    Preference(
        "fast_wifi",
        ("I have a video call and need a fast, stable connection",),
        ("long:Positive:fast wifi", "tag:Facility:WiFi"),
    ),
    Preference(
        "fresh", ("I only want food made from produce bought that morning",), ("long:Positive:fresh ingredients",)
    ),
    Preference(
        "trails",
        ("I want well-maintained paths for a morning jog",),
        ("long:Positive:well-kept trails", "tag:Facility:Lakeside trail", "tag:Scenery:Forest trail"),
    ),
    Preference(
        "cocktails",
        ("I want an expertly mixed drink tonight",),
        ("long:Positive:great cocktails", "tag:Drinks:Cocktails"),
    ),
    Preference(
        "matcha",
        ("I'm obsessed with anything green-tea flavoured right now",),
        ("short:New Arrival:new matcha series",),
    ),
    Preference(
        "live_music",
        ("I'd love to hear a band play tonight",),
        ("tag:Service:Live music", "short:Event:live music on Friday nights"),
    ),
    Preference(
        "german",
        ("I'm practising my German and want to chat with other learners",),
        ("short:Event:German Corner on Sundays",),
    ),
    Preference("outlets", ("my laptop battery is nearly dead",), ("tag:Facility:Power outlets",)),
    Preference(
        "books",
        ("I forgot my novel, so I'd like something to leaf through there",),
        ("tag:Facility:Bookshelves", "tag:Facility:Reading area", "short:New Arrival:new reading corner"),
    ),
    Preference("sofa", ("I want to sink into something soft and read for hours",), ("tag:Facility:Reading sofa",)),
    Preference(
        "outdoor",
        ("I'd like to sit outside in the fresh air",),
        ("tag:Facility:Outdoor seating", "tag:Facility:Terrace"),
    ),
    Preference("daylight", ("I love sitting under natural daylight",), ("tag:Facility:Glass roof",)),
    Preference("corgi", ("I want to play with some short-legged dogs",), ("tag:Pet:Corgi",)),
    Preference("ragdoll", ("I want to cuddle a big, floppy, long-haired cat",), ("tag:Pet:Ragdoll cat",)),
    Preference(
        "umbrella",
        ("it's pouring and I have no umbrella", "I got caught in the rain without any rain gear"),
        ("tag:Service:Free umbrella borrowing",),
    ),
    Preference("power_bank", ("my phone is about to die and I have no charger",), ("tag:Service:Power bank rental",)),
    Preference(
        "private_room",
        ("our group wants a space closed off from the other guests",),
        ("tag:Facility:Private rooms", "tag:Facility:Party room"),
    ),
    Preference(
        "kids_area",
        ("my toddlers need a play corner while we eat",),
        ("tag:Facility:Kids area", "tag:Facility:Playground"),
    ),
    Preference("mochi", ("I want a drink with those chewy rice-cake bits in it",), ("tag:Drinks:Milk tea with mochi",)),
    Preference(
        "hot_dry_noodles",
        ("I must try the sesame-paste noodle dish this city is famous for",),
        ("tag:Dish:Hot dry noodles",),
    ),
    Preference("egg_tarts", ("I'm craving a flaky Portuguese-style custard pastry",), ("tag:Food:Egg tarts",)),
    Preference(
        "lakeside_walk",
        ("I want a stroll along the water",),
        ("tag:Facility:Lakeside trail", "tag:Scenery:Walk above the lake"),
    ),
    Preference(
        "lake_walk", ("I want to stroll on a boardwalk right over the water",), ("tag:Scenery:Walk above the lake",)
    ),
    Preference("board_games", ("we want to play Catan and Monopoly with friends",), ("tag:Service:Board games",)),
    Preference("swim", ("I want to do some laps before work",), ("tag:Facility:Swimming pool",)),
    Preference("eye_test", ("I need my eyes checked and don't want to pay for it",), ("tag:Service:Free eye test",)),
    Preference(
        "dinosaurs",
        ("my son can't stop talking about T. rex",),
        ("tag:Exhibit:Dinosaur fossils", "tag:Exhibit:Natural history"),
    ),
    Preference("karaoke", ("we want to sing our hearts out",), ("tag:Service:Karaoke",)),
)
PREFERENCE_BY_KEY = {p.key: p for p in PREFERENCES}

# Things a user can rule out ("I absolutely hate mosquitoes"): a place with any of the facts fails.
DISLIKES: tuple[Preference, ...] = (
    Preference("mosquitoes", ("I absolutely hate mosquitoes",), ("long:Negative:mosquitoes in summer",)),
    Preference(
        "queues", ("I really can't stand queuing",), ("long:Negative:long queues", "short:Crowd:queues after 18:00")
    ),
    Preference("weekend_noise", ("noise drives me crazy",), ("long:Atmosphere:noisy at weekends",)),
    Preference(
        "crowds",
        ("I hate crowds",),
        (
            "long:Negative:crowded at weekends",
            "long:Atmosphere:often full",
            "short:Crowd:extremely crowded during cherry blossom season",
        ),
    ),
    Preference("pricey", ("I don't want overpriced drinks",), ("long:Negative:pricey drinks",)),
    Preference(
        "hidden_entrance",
        ("I get lost easily, so the entrance should be easy to find",),
        ("long:Negative:hard to find entrance",),
    ),
)

# What each preference means, as word stems (lower case). Uniqueness is checked both ways: every
# tag or memory fact of the city's vocabulary whose value contains one of a preference's stems
# means what the preference means, so it must be among the preference's facts (a test checks
# this), otherwise a candidate holding it would fit the query without the engine knowing
# (issue 11: "Rule: Quiet zone" was not a "quiet" fact; "crowded during cherry blossom season" was
# not a "sakura" fact).
STEMS: dict[str, tuple[str, ...]] = {
    "quiet": ("quiet",),
    "study": ("study", "studying"),
    "cozy": ("cozy",),
    "lively": ("lively",),
    "romantic": ("romantic",),
    "family": ("family", "kids", "baby", "playground"),
    "cute": ("cute",),
    "music": ("soothing music",),
    "lake_view": ("lake view", "over the lake", "lake sunset"),
    "rooftop": ("rooftop", "skyline", "viewing platform"),
    "sakura": ("cherry", "blossom"),
    "sunset": ("sunset",),
    "latte_art": ("latte art",),
    "big_portions": ("portion",),
    "fast_wifi": ("wifi",),
    "fresh": ("fresh ingredients",),
    "trails": ("trail",),
    "cocktails": ("cocktail",),
    "matcha": ("matcha",),
    "live_music": ("live music",),
    "german": ("german",),
    "outlets": ("power outlet",),
    "books": ("bookshel", "reading area", "reading corner"),
    "sofa": ("sofa",),
    "outdoor": ("outdoor", "terrace"),
    "daylight": ("glass roof",),
    "corgi": ("corgi",),
    "ragdoll": ("ragdoll",),
    "umbrella": ("umbrella",),
    "power_bank": ("power bank",),
    "private_room": ("private room", "party room"),
    "kids_area": ("kids area", "playground"),
    "mochi": ("mochi",),
    "hot_dry_noodles": ("hot dry noodles",),
    "egg_tarts": ("egg tart",),
    "lakeside_walk": ("lakeside", "walk above"),
    "lake_walk": ("walk above",),
    "board_games": ("board game",),
    "swim": ("swim",),
    "eye_test": ("eye test",),
    "dinosaurs": ("dinosaur", "natural history"),
    "karaoke": ("karaoke",),
    # dislikes
    "mosquitoes": ("mosquito",),
    "queues": ("queue",),
    "weekend_noise": ("noisy",),
    "crowds": ("crowded", "often full"),
    "pricey": ("pricey",),
    "hidden_entrance": ("hard to find",),
}

# Place sub-types that fit a preference by what they are (a KTV is for singing, a library for
# revising): in an area the query only implies ("near X", no type), a place of such a type fits
# the need whatever its facts, so the uniqueness check counts it too.
TYPES_MEANING: dict[str, tuple[str, ...]] = {
    "karaoke": ("KTV",),
    "study": ("Library",),
    "books": ("Bookstore", "Library"),
}


# --------------------------------------------------------------------------------------------
# Facts that hold only at certain times
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeWindow:
    """When a fact holds: on `days` (0 = Monday), from `start` to `end` (minutes of the day), in
    `season`, or on `dates` a query never states (a promotion, a holiday); None: any."""

    days: tuple[int, ...] | None = None
    start: int | None = None
    end: int | None = None
    season: str | None = None
    dates: str | None = None


_WEEKEND = (5, 6)
_WEEKDAYS = (0, 1, 2, 3, 4)
_EVENING = (17 * 60, 21 * 60)  # when a sunset over the lake can be watched, all year round

# Every fact of the city's vocabularies that says when it holds (a test finds the time words in
# the vocabularies and checks each such fact is here): issue 28's "German Corner on Sundays"
# supports a wish to chat in German only on a Sunday visit.
TIME_BOUND: dict[str, TimeWindow] = {
    "short:Event:German Corner on Sundays": TimeWindow(days=(6,)),
    "short:Event:live music on Friday nights": TimeWindow(days=(4,), start=18 * 60, end=24 * 60),
    "short:Crowd:queues after 18:00": TimeWindow(start=18 * 60, end=24 * 60),
    "short:Crowd:empty on weekday mornings": TimeWindow(days=_WEEKDAYS, start=6 * 60, end=12 * 60),
    "short:Special Hours:opens late on Mondays": TimeWindow(days=(0,)),
    "long:Atmosphere:noisy at weekends": TimeWindow(days=_WEEKEND),
    "long:Negative:crowded at weekends": TimeWindow(days=_WEEKEND),
    "tag:Rule:No laptops at weekends": TimeWindow(days=_WEEKEND),
    "long:Service:slow at peak hours": TimeWindow(dates="peak hours"),
    "long:Negative:mosquitoes in summer": TimeWindow(season="summer"),
    "long:Scenery:cherry blossoms in spring": TimeWindow(season="spring"),
    "tag:Scenery:Cherry blossoms": TimeWindow(season="spring"),
    "short:Crowd:extremely crowded during cherry blossom season": TimeWindow(season="spring"),
    "long:Scenery:sunset over the lake": TimeWindow(start=_EVENING[0], end=_EVENING[1]),
    "tag:Scenery:Lake sunset": TimeWindow(start=_EVENING[0], end=_EVENING[1]),
    "short:Event:Christmas promo (Dec 24-25)": TimeWindow(dates="Dec 24-25"),
    "short:Event:Valentine's Day limited edition menu": TimeWindow(dates="Valentine's Day"),
    "short:Event:20% off for students this week": TimeWindow(dates="this week"),
    "short:New Arrival:new arrivals this week": TimeWindow(dates="this week"),
    "short:New Arrival:new seasonal menu": TimeWindow(dates="this season"),
    "short:Special Hours:closed for renovation until next month": TimeWindow(dates="until next month"),
    "short:Special Hours:open until 23:00 during the holidays": TimeWindow(dates="the holidays"),
}
