"""The synthetic city's taxonomy and vocabulary (declarative data): categories with their
name parts, costs, hours styles and tags; memory profiles and vocabularies; the phrase banks
of names, notes and comments."""

from __future__ import annotations

from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Taxonomy and vocabulary of the synthetic city
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    place_type: str  # AMap-like "Top|Sub"
    weight: float  # share of places
    nouns: tuple[str, ...]  # name endings for independent places
    brands: tuple[str, ...]  # chain brands (their places are "Brand (District Branch)")
    cost: tuple[int, int] | None  # cost per person range, CNY; None: no cost
    hours: tuple[str, ...]  # opening-hours styles, see _hours_text
    tags: tuple[tuple[str, tuple[str, ...]], ...]
    audience: tuple[str, ...] = ()


_FOOD_HOURS = ("day", "day", "day", "split", "closed_monday", "late")
_SHOP_HOURS = ("day", "day", "weekday_weekend", "closed_sunday", "unknown")

CATEGORIES: tuple[Category, ...] = (
    Category(
        "Food & Beverages|Coffee House",
        9,
        ("Coffee", "Cafe", "Coffee Roasters", "Coffee Lab"),
        ("Lucky Bean Coffee", "Mocha Lane", "Ritual Brew"),
        (15, 45),
        ("day", "day", "late", "closed_monday"),
        (
            ("Coffee", ("Espresso", "Pour-over", "Latte", "Cold brew", "Macchiato")),
            ("Food", ("Pasta", "Snacks", "Desserts", "Bagels")),
            (
                "Facility",
                (
                    "WiFi",
                    "Power outlets",
                    "Reading sofa",
                    "Bookshelves",
                    "Outdoor seating",
                    "Glass roof",
                    "Air conditioning",
                ),
            ),
            ("Rule", ("No laptops at weekends", "Pet-friendly", "Quiet zone")),
        ),
    ),
    Category(
        "Food & Beverages|Tea House",
        6,
        ("Tea", "Milk Tea", "Tea House"),
        ("GoodMe Tea", "Cha Yan", "Mixue Ice"),
        (8, 25),
        ("day", "late"),
        (
            ("Drinks", ("Fruit tea", "Milk tea with mochi", "Cheese foam tea", "Lemon tea")),
            ("Facility", ("Takeaway only", "Seating", "Self-service ordering")),
        ),
    ),
    Category(
        "Food & Beverages|Chinese Restaurant",
        10,
        ("Restaurant", "Kitchen", "Dumplings", "Noodles", "Bistro"),
        ("Yuanji Dumplings", "Old Town Noodles"),
        (20, 120),
        _FOOD_HOURS,
        (
            ("Cuisine", ("Hubei", "Sichuan", "Cantonese", "Hunan", "Dim sum")),
            ("Dish", ("Hot dry noodles", "Duck neck", "Steamed fish", "Spicy crayfish", "Lotus root soup")),
            ("Facility", ("Private rooms", "Large tables", "Parking", "Baby chairs")),
            ("Service", ("Reservation", "Delivery", "Group buy")),
        ),
    ),
    Category(
        "Food & Beverages|Fast Food Restaurant",
        5,
        ("Burger", "Fried Chicken", "Fast Food"),
        ("Wallace Burger", "Tasty Crispy"),
        (15, 40),
        ("day", "late", "always"),
        (("Food", ("Burgers", "Fried chicken", "Fries", "Wraps")), ("Facility", ("Self-service kiosk", "Kids area"))),
    ),
    Category(
        "Food & Beverages|Hot Pot Restaurant",
        4,
        ("Hot Pot", "Hotpot House"),
        ("Bashu Hotpot",),
        (60, 160),
        ("late", "day"),
        (
            ("Broth", ("Spicy beef tallow", "Tomato", "Mushroom", "Dual broth")),
            ("Service", ("Free snacks while waiting", "Birthday song", "Reservation")),
        ),
    ),
    Category(
        "Food & Beverages|Bakery",
        4,
        ("Bakery", "Bread", "Cake Studio"),
        ("GANSO Bakery", "Bread Talk"),
        (10, 50),
        ("day", "closed_monday"),
        (
            ("Food", ("Meat floss cake", "Croissants", "Cheesecake", "Egg tarts", "Peach crisp")),
            ("Service", ("Custom cakes", "Delivery")),
        ),
    ),
    Category(
        "Food & Beverages|Dessert House",
        3,
        ("Sweets", "Dessert", "Grass Jelly"),
        ("Minsheng Sweet",),
        (12, 40),
        ("day", "late"),
        (("Food", ("Grass jelly", "Mango pomelo sago", "Tangyuan", "Shaved ice")),),
    ),
    Category(
        "Food & Beverages|Barbecue Restaurant",
        4,
        ("BBQ", "Yakiniku", "Skewers"),
        ("Songbencang Yakiniku",),
        (50, 150),
        ("late", "split"),
        (
            ("Food", ("Beef skewers", "Grilled oysters", "Lamb chops", "Wagyu")),
            ("Facility", ("Outdoor seating", "Private rooms", "Smoke extraction")),
        ),
    ),
    Category(
        "Food & Beverages|Pet Cafe",
        1.5,
        ("Pet Cafe", "Cat Cafe", "Dog Cafe"),
        (),
        (40, 90),
        ("day", "closed_monday"),
        (
            ("Pet", ("Corgi", "Shiba Inu", "Ragdoll cat", "Golden retriever", "British shorthair")),
            ("Rule", ("Reservation required", "Socks required", "No flash photography")),
        ),
    ),
    Category(
        "Shopping|Convenience Store",
        5,
        ("Convenience Store", "Mart"),
        ("Keduo Convenience", "Family Mart+"),
        (5, 20),
        ("always", "late", "day"),
        (("Service", ("Free umbrella borrowing", "Hot food", "Parcel pickup", "Power bank rental", "ATM")),),
    ),
    Category(
        "Shopping|Supermarket",
        3,
        ("Supermarket", "Fresh Market"),
        ("Ziqiang Supermarket", "Zhongbai Mart"),
        (20, 80),
        ("day", "weekday_weekend"),
        (
            ("Goods", ("Daily essentials", "Fresh produce", "Imported snacks", "Household goods")),
            ("Facility", ("Parking", "Self-checkout")),
        ),
    ),
    Category(
        "Shopping|Bookstore",
        2,
        ("Books", "Bookstore", "Reading Room"),
        ("Youhe Bookstore",),
        (30, 80),
        ("day", "late"),
        (
            ("Facility", ("Reading area", "Cafe corner", "Study desks", "Power outlets")),
            ("Goods", ("Art books", "Second-hand books", "Stationery")),
        ),
    ),
    Category(
        "Shopping|Florist",
        1.5,
        ("Florist", "Flowers"),
        ("Yunsheng Florist",),
        (50, 200),
        ("day",),
        (("Goods", ("Roses", "Sunflowers", "Dried flowers", "Potted plants")), ("Service", ("Same-day delivery",))),
    ),
    Category(
        "Shopping|Optical Shop",
        1,
        ("Optical", "Eyewear"),
        ("Boyi Optical",),
        (200, 1200),
        _SHOP_HOURS,
        (
            ("Brand", ("Zeiss authorized", "Essilor", "Ray-Ban")),
            ("Service", ("Free eye test", "Lens authenticity check")),
        ),
    ),
    Category(
        "Shopping|Brand Bags and Suitcases Store",
        1,
        ("Leather", "Bags"),
        ("COACH", "Samsonite"),
        None,
        ("day",),
        (("Category", ("Luxury bags", "Suitcases", "Wallets")), ("Facility", ("Mall parking",))),
    ),
    Category(
        "Sports & Recreation|Pub",
        2.5,
        ("Bar", "Pub", "Homebar"),
        ("Sanqi Homebar",),
        (60, 180),
        ("night", "night", "closed_monday_night"),
        (
            ("Drinks", ("Cocktails", "Craft beer", "Whisky")),
            ("Service", ("Karaoke", "Board games", "Live music")),
            ("Facility", ("Private rooms", "Terrace", "Smoking area")),
            ("Rule", ("Women-friendly", "Reservation required")),
        ),
    ),
    Category(
        "Sports & Recreation|KTV",
        1.5,
        ("KTV", "Karaoke"),
        ("Melody KTV",),
        (60, 150),
        ("night", "late"),
        (("Facility", ("Private rooms", "Free fruit platter", "Party room")),),
    ),
    Category(
        "Sports & Recreation|Gym",
        2,
        ("Fitness", "Gym", "Yoga Studio"),
        ("Supermonkey Gym",),
        (30, 100),
        ("weekday_weekend", "day"),
        (
            ("Facility", ("Showers", "Lockers", "Swimming pool", "Climbing wall")),
            ("Service", ("Trial class", "Day pass")),
        ),
    ),
    Category(
        "Scenery Spot|Park",
        2,
        ("Park", "Garden", "Lake Park"),
        (),
        None,
        ("always", "park"),
        (
            ("Facility", ("Fountain", "Playground", "Lakeside trail", "Public toilets")),
            ("Scenery", ("Cherry blossoms", "Lotus pond", "Lake sunset", "Forest trail")),
        ),
    ),
    Category(
        "Scenery Spot|Tourist Attraction",
        1.5,
        ("Trestle", "Gate", "Tower", "Lake"),
        (),
        (0, 60),
        ("always", "park", "day"),
        (
            ("Scenery", ("Lake sunset", "City skyline", "Historic gate", "Walk above the lake")),
            ("Facility", ("Shuttle bus stop", "Viewing platform")),
        ),
    ),
    Category(
        "Accommodation Service|Business Hotel",
        3,
        ("Hotel", "Business Hotel", "Inn"),
        ("Ruian Hotel", "Jinjiang Inn"),
        (180, 500),
        ("always",),
        (("Facility", ("Luggage storage", "Gym", "Laundry", "Parking")), ("Service", ("Airport shuttle", "Breakfast"))),
    ),
    Category(
        "Accommodation Service|Hostel",
        1,
        ("Hostel", "Youth Hostel"),
        (),
        (60, 150),
        ("always",),
        (("Facility", ("Shared kitchen", "Luggage storage", "Common room")),),
    ),
    Category(
        "Science/Culture & Education Service|Museum",
        1,
        ("Museum", "Gallery", "Art Museum"),
        (),
        (0, 80),
        ("museum",),
        (
            ("Exhibit", ("Natural history", "Modern art", "Dinosaur fossils", "Local history")),
            ("Service", ("Free audio guide", "Kids workshop")),
        ),
    ),
    Category(
        "Science/Culture & Education Service|Library",
        1,
        ("Library",),
        (),
        None,
        ("weekday_weekend", "museum"),
        (("Facility", ("Study desks", "Power outlets", "Air conditioning")),),
    ),
    Category(
        "Medical Service|Pharmacy",
        2.5,
        ("Pharmacy", "Drugstore"),
        ("Laobaixing Pharmacy",),
        None,
        ("day", "always"),
        (("Service", ("24h window", "Medical insurance accepted", "Blood pressure check")),),
    ),
    Category(
        "Medical Service|Hospital",
        0.7,
        ("Hospital", "Clinic"),
        (),
        None,
        ("always", "weekday_weekend"),
        (("Department", ("Emergency", "Pediatrics", "Dental", "Ophthalmology")),),
    ),
    Category(
        "Life Service|Hair Salon",
        2.5,
        ("Hair Salon", "Barber"),
        (),
        (30, 200),
        ("day", "closed_tuesday"),
        (("Service", ("Haircut", "Perm", "Hair coloring", "Scalp care")),),
    ),
    Category(
        "Life Service|Laundry",
        1,
        ("Laundry", "Dry Cleaning"),
        (),
        (10, 50),
        ("day", "weekday_weekend"),
        (("Service", ("Self-service washers", "Dry cleaning", "Shoe cleaning")),),
    ),
    Category(
        "Auto Service|Dedicated Charging Station",
        1,
        ("Charging Station", "EV Charging"),
        ("StarCharge",),
        None,
        ("always",),
        (("Facility", ("Fast chargers", "Free parking 2h")),),
    ),
    Category(
        "Enterprises|Company",
        5,
        ("Technology Co., Ltd.", "Tech", "Design Studio", "Space"),
        (),
        None,
        ("weekday", "unknown"),
        (("Facility", ("Visitor registration", "Parking")),),
    ),
    Category(
        "Residential Area|Residential Community",
        3,
        ("Garden", "Residence", "Community", "Apartments"),
        (),
        None,
        ("unknown",),
        (("Facility", ("Gated", "Parcel lockers")),),
    ),
    Category(
        "Science/Culture & Education Service|University",
        0.5,
        ("University", "College"),
        (),
        None,
        ("always",),
        (("Facility", ("Campus gate", "Library", "Canteen")),),
    ),
)

# Each category has a memory profile: which distilled impressions make sense for it.
PROFILE_OF: dict[str, str] = {
    "Food & Beverages|Coffee House": "cafe",
    "Food & Beverages|Tea House": "cafe",
    "Food & Beverages|Dessert House": "cafe",
    "Food & Beverages|Bakery": "cafe",
    "Food & Beverages|Pet Cafe": "cafe",
    "Shopping|Bookstore": "cafe",
    "Food & Beverages|Chinese Restaurant": "food",
    "Food & Beverages|Fast Food Restaurant": "food",
    "Food & Beverages|Hot Pot Restaurant": "food",
    "Food & Beverages|Barbecue Restaurant": "food",
    "Sports & Recreation|Pub": "night",
    "Sports & Recreation|KTV": "night",
    "Sports & Recreation|Gym": "leisure",
    "Science/Culture & Education Service|Museum": "leisure",
    "Science/Culture & Education Service|Library": "leisure",
    "Science/Culture & Education Service|University": "leisure",
    "Scenery Spot|Park": "scenery",
    "Scenery Spot|Tourist Attraction": "scenery",
    "Accommodation Service|Business Hotel": "stay",
    "Accommodation Service|Hostel": "stay",
    "Enterprises|Company": "plain",
    "Residential Area|Residential Community": "plain",
    "Medical Service|Hospital": "plain",
}  # every other category: "shop"
_ANY = "cafe food night leisure scenery stay shop"

# Long memory: what posts say about a place over time (attribute distillation, section 3.1), as
# (key, ((value, profiles), ...)). Values are written so that the note sentences read naturally.
LONG_MEM_VOCAB: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Atmosphere",
        (
            ("quiet", "cafe leisure stay scenery"),
            ("cozy", "cafe food night stay"),
            ("lively", "food night scenery"),
            ("noisy at weekends", "food cafe night scenery"),
            ("good for studying", "cafe leisure"),
            ("romantic", "food night scenery"),
            ("family-friendly", "food scenery leisure shop"),
            ("well-lit", "cafe shop leisure"),
            ("soothing music", "cafe night"),
            ("cute pink decor", "cafe food"),
            ("often full", "cafe food night"),
        ),
    ),
    (
        "Scenery",
        (
            ("lake view", "cafe food scenery stay"),
            ("rooftop view", "cafe night stay"),
            ("no real view", "cafe food shop"),
            ("cherry blossoms in spring", "scenery"),
            ("sunset over the lake", "scenery cafe"),
            ("street view", "cafe food"),
        ),
    ),
    (
        "Service",
        (
            ("welcoming", _ANY + " plain"),
            ("slow at peak hours", "food cafe shop"),
            ("professional", "shop leisure stay plain"),
            ("attentive", "food night stay"),
            ("patient", "shop leisure"),
            ("rude at the cashier", "shop food"),
        ),
    ),
    (
        "Positive",
        (
            ("great latte art", "cafe"),
            ("affordable", _ANY),
            ("generous portions", "food"),
            ("clean toilets", _ANY),
            ("fast wifi", "cafe stay"),
            ("fresh ingredients", "food"),
            ("well-kept trails", "scenery"),
            ("great cocktails", "night"),
            ("wide selection", "shop"),
        ),
    ),
    (
        "Negative",
        (
            ("limited seating", "cafe food"),
            ("long queues", "food cafe shop scenery"),
            ("mediocre desserts", "cafe food"),
            ("mosquitoes in summer", "scenery cafe food"),
            ("hard to find entrance", _ANY + " plain"),
            ("pricey drinks", "cafe night"),
            ("crowded at weekends", "scenery shop leisure"),
        ),
    ),
)
SHORT_MEM_VOCAB: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Event",
        (
            ("Christmas promo (Dec 24-25)", _ANY),
            ("free fries for social media check-in", "food"),
            ("live music on Friday nights", "night cafe"),
            ("20% off for students this week", _ANY),
            ("Valentine's Day limited edition menu", "food cafe night"),
            ("German Corner on Sundays", "cafe"),
        ),
    ),
    (
        "Crowd",
        (
            ("extremely crowded during cherry blossom season", "scenery"),
            ("queues after 18:00", "food"),
            ("empty on weekday mornings", _ANY),
        ),
    ),
    (
        "Special Hours",
        (
            ("closed for renovation until next month", _ANY + " plain"),
            ("open until 23:00 during the holidays", _ANY),
            ("opens late on Mondays", _ANY),
        ),
    ),
    (
        "New Arrival",
        (
            ("new seasonal menu", "food cafe"),
            ("new matcha series", "cafe"),
            ("new reading corner", "cafe leisure"),
            ("new arrivals this week", "shop"),
        ),
    ),
)


def _vocab_for(vocab: tuple[tuple[str, tuple[tuple[str, str], ...]], ...], profile: str) -> list[tuple[str, list[str]]]:
    out = []
    for key, entries in vocab:
        vals = [v for v, profiles in entries if profile in profiles.split()]
        if vals:
            out.append((key, vals))
    return out


_LONG_SENTENCES = {
    "Atmosphere": ("The atmosphere is {v}.", "Honestly the vibe is {v}.", "It felt {v} when I went."),
    "Scenery": ("Scenery: {v}.", "As for the view: {v}.", "View-wise, {v}."),
    "Service": ("Staff were {v}.", "Service is {v}.", "The staff were {v}, as usual."),
    "Positive": ("Highlight: {v}.", "What I loved: {v}.", "Plus side, {v}."),
    "Negative": ("Downside: {v}.", "Only complaint: {v}.", "Be warned: {v}."),
}
_SHORT_SENTENCES = {
    "Event": ("Heads up: {v}!", "They currently have this: {v}."),
    "Crowd": ("Note: {v}.", "FYI {v}."),
    "Special Hours": ("Update: {v}.", "Careful, {v}."),
    "New Arrival": ("Just tried the {v}.", "They launched a {v}."),
}
_TAG_SENTENCES = ("They have {v}.", "Good to know: {v}.", "Loved the {v}.", "{v} available, nice.")

SYLLABLES = (
    "Luo",
    "Jia",
    "Hong",
    "Bo",
    "Yuan",
    "Ji",
    "Tang",
    "Shan",
    "Guang",
    "Bu",
    "Dong",
    "Hu",
    "Zhong",
    "Nan",
    "Bao",
    "Feng",
    "Xu",
    "Shui",
    "Guo",
    "Chu",
    "He",
    "Lu",
    "Xiang",
    "Guan",
    "Li",
    "Wu",
    "Ling",
    "Qiao",
    "Mei",
    "Yun",
    "Sheng",
    "Kai",
    "Wen",
    "Hua",
    "Xin",
    "Ming",
    "Tai",
    "Ping",
    "An",
    "Le",
    "Jin",
    "Yu",
    "Song",
    "Ying",
    "Zhuo",
    "Quan",
    "Fu",
    "Shi",
    "Da",
    "Ke",
)
DISTRICT_NAMES = (
    "Jiedaokou",
    "Guangbutun",
    "Luojiashan",
    "Donghu",
    "Hongshan",
    "Zhongnan",
    "Baofeng",
    "Xudong",
    "Shuiguohu",
    "Chuhe",
    "Luxiang",
    "Guanshan",
    "Zhuodaoquan",
    "Liyuan",
    "Tangjiadun",
    "Wujiashan",
)
_FOOTWAY_NAMES = ("Hubu Alley", "Tanhualin", "Lingbo Walkway", "Yuemachang Lane", "Pedestrian Street", "Garden Path")
_FILLER = (
    "Went with my roommate after class.",
    "Parking was a pain.",
    "Weather was great today.",
    "Will come back for sure.",
    "Not sponsored, just sharing.",
    "Took the metro, easy to reach.",
    "Saving this for later.",
    "Photos don't do it justice.",
    "Came here on a rainy afternoon.",
    "My friends from out of town loved it.",
)
_HOOKS = (
    "hidden gem",
    "worth the hype?",
    "my weekend spot",
    "honest review",
    "first visit",
    "again and again",
    "budget pick",
    "not what I expected",
    "perfect for a date",
    "study day",
)
_GENERAL_TITLES = (
    "Weekend citywalk diary",
    "Rainy day in {d}",
    "Where to eat around {d}?",
    "Moving to {d}: tips",
    "Cherry blossom season is here",
    "Night run by the lake",
)
_COMMENT_NOISE = (
    "Bookmarked!",
    "lol same",
    "Great photos",
    "Where is this exactly?",
    "Going this weekend",
    "Is it open on Mondays?",
    "How much per person?",
    "Thanks for sharing",
    "Too crowded for me",
    "Need to try this",
    "Is parking available?",
    "The photos look edited",
)
_COMMENT_FACT = ("Agree, {s}", "Can confirm. {s}", "Went yesterday. {s}", "{s} (at least last time)")
_HASHTAGS = (
    "citywalk",
    "foodie",
    "weekend",
    "study spot",
    "date night",
    "budget",
    "photo spot",
    "local life",
    "student life",
    "family time",
)
