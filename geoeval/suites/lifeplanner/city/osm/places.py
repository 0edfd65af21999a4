"""Reading one OSM POI row as a LifePlanner place: its AMap-like place type and synthetic template
category (`OSM_CATEGORIES`, `_place_type`), the tags OSM states (`_extra_tags`, `_osm_tag_groups`)
and a place id stable across rebuilds (`_stable_place_id`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# (OSM key, value) -> (AMap-like place type, synthetic template category of environment.CATEGORIES
# for costs, fallback tags and the memory profile; None: no cost, no synthetic tags, profile "shop").
_FOOD = "Food & Beverages"
OSM_CATEGORIES: dict[tuple[str, str], tuple[str, str | None]] = {
    ("amenity", "cafe"): (f"{_FOOD}|Coffee House", f"{_FOOD}|Coffee House"),
    ("amenity", "restaurant"): (f"{_FOOD}|Restaurant", f"{_FOOD}|Chinese Restaurant"),
    ("amenity", "fast_food"): (f"{_FOOD}|Fast Food Restaurant", f"{_FOOD}|Fast Food Restaurant"),
    ("amenity", "food_court"): (f"{_FOOD}|Fast Food Restaurant", f"{_FOOD}|Fast Food Restaurant"),
    ("amenity", "ice_cream"): (f"{_FOOD}|Dessert House", f"{_FOOD}|Dessert House"),
    ("amenity", "pub"): ("Sports & Recreation|Pub", "Sports & Recreation|Pub"),
    ("amenity", "bar"): ("Sports & Recreation|Pub", "Sports & Recreation|Pub"),
    ("amenity", "nightclub"): ("Sports & Recreation|Nightclub", "Sports & Recreation|Pub"),
    ("amenity", "casino"): ("Sports & Recreation|Casino", "Sports & Recreation|KTV"),
    ("amenity", "cinema"): ("Sports & Recreation|Cinema", "Sports & Recreation|KTV"),
    ("amenity", "theatre"): (
        "Science/Culture & Education Service|Theatre",
        "Science/Culture & Education Service|Museum",
    ),
    ("amenity", "arts_centre"): (
        "Science/Culture & Education Service|Art Centre",
        "Science/Culture & Education Service|Museum",
    ),
    ("amenity", "library"): (
        "Science/Culture & Education Service|Library",
        "Science/Culture & Education Service|Library",
    ),
    ("amenity", "university"): (
        "Science/Culture & Education Service|University",
        "Science/Culture & Education Service|University",
    ),
    ("amenity", "college"): (
        "Science/Culture & Education Service|University",
        "Science/Culture & Education Service|University",
    ),
    ("amenity", "school"): ("Science/Culture & Education Service|School", None),
    ("amenity", "pharmacy"): ("Medical Service|Pharmacy", "Medical Service|Pharmacy"),
    ("amenity", "doctors"): ("Medical Service|Clinic", "Medical Service|Hospital"),
    ("amenity", "clinic"): ("Medical Service|Clinic", "Medical Service|Hospital"),
    ("amenity", "dentist"): ("Medical Service|Dental Clinic", "Medical Service|Hospital"),
    ("amenity", "bank"): ("Finance Service|Bank", None),
    ("amenity", "atm"): ("Finance Service|ATM", None),
    ("amenity", "bureau_de_change"): ("Finance Service|Currency Exchange", None),
    ("amenity", "post_office"): ("Life Service|Post Office", None),
    ("amenity", "place_of_worship"): ("Scenery Spot|Place of Worship", "Scenery Spot|Tourist Attraction"),
    ("amenity", "marketplace"): ("Shopping|Market", "Shopping|Supermarket"),
    ("amenity", "bicycle_rental"): ("Transportation Service|Bike Rental", None),
    ("amenity", "parking"): ("Transportation Service|Parking Lot", None),
    ("amenity", "bus_station"): ("Transportation Service|Bus Station", None),
    ("amenity", "ferry_terminal"): ("Transportation Service|Ferry Terminal", None),
    ("amenity", "embassy"): ("Government Agency|Embassy", None),
    ("amenity", "townhall"): ("Government Agency|Town Hall", None),
    ("amenity", "courthouse"): ("Government Agency|Court", None),
    ("shop", "bakery"): (f"{_FOOD}|Bakery", f"{_FOOD}|Bakery"),
    ("shop", "confectionery"): (f"{_FOOD}|Dessert House", f"{_FOOD}|Dessert House"),
    ("shop", "convenience"): ("Shopping|Convenience Store", "Shopping|Convenience Store"),
    ("shop", "kiosk"): ("Shopping|Convenience Store", "Shopping|Convenience Store"),
    ("shop", "supermarket"): ("Shopping|Supermarket", "Shopping|Supermarket"),
    ("shop", "grocery"): ("Shopping|Supermarket", "Shopping|Supermarket"),
    ("shop", "deli"): ("Shopping|Supermarket", "Shopping|Supermarket"),
    ("shop", "books"): ("Shopping|Bookstore", "Shopping|Bookstore"),
    ("shop", "florist"): ("Shopping|Florist", "Shopping|Florist"),
    ("shop", "optician"): ("Shopping|Optical Shop", "Shopping|Optical Shop"),
    ("shop", "bag"): ("Shopping|Brand Bags and Suitcases Store", "Shopping|Brand Bags and Suitcases Store"),
    ("shop", "leather"): ("Shopping|Brand Bags and Suitcases Store", "Shopping|Brand Bags and Suitcases Store"),
    ("shop", "clothes"): ("Shopping|Clothing Store", None),
    ("shop", "shoes"): ("Shopping|Shoe Store", None),
    ("shop", "jewelry"): ("Shopping|Jewelry Store", None),
    ("shop", "department_store"): ("Shopping|Department Store", None),
    ("shop", "mall"): ("Shopping|Shopping Mall", None),
    ("shop", "hairdresser"): ("Life Service|Hair Salon", "Life Service|Hair Salon"),
    ("shop", "beauty"): ("Life Service|Beauty Salon", "Life Service|Hair Salon"),
    ("shop", "laundry"): ("Life Service|Laundry", "Life Service|Laundry"),
    ("shop", "travel_agency"): ("Life Service|Travel Agency", None),
    ("tourism", "hotel"): ("Accommodation Service|Hotel", "Accommodation Service|Business Hotel"),
    ("tourism", "hostel"): ("Accommodation Service|Hostel", "Accommodation Service|Hostel"),
    ("tourism", "museum"): ("Science/Culture & Education Service|Museum", "Science/Culture & Education Service|Museum"),
    ("tourism", "gallery"): (
        "Science/Culture & Education Service|Art Gallery",
        "Science/Culture & Education Service|Museum",
    ),
    ("tourism", "attraction"): ("Scenery Spot|Tourist Attraction", "Scenery Spot|Tourist Attraction"),
    ("tourism", "artwork"): ("Scenery Spot|Public Artwork", "Scenery Spot|Tourist Attraction"),
    ("tourism", "information"): ("Scenery Spot|Tourist Information", None),
    ("leisure", "park"): ("Scenery Spot|Park", "Scenery Spot|Park"),
    ("leisure", "garden"): ("Scenery Spot|Park", "Scenery Spot|Park"),
    ("leisure", "fitness_centre"): ("Sports & Recreation|Gym", "Sports & Recreation|Gym"),
    ("leisure", "sports_centre"): ("Sports & Recreation|Sports Centre", "Sports & Recreation|Gym"),
}
# Any other value falls back by key: "Shopping|Other Shop (<value>)" etc.
_FALLBACK_TOP = {
    "amenity": "Public Facility",
    "shop": "Shopping",
    "tourism": "Scenery Spot",
    "leisure": "Sports & Recreation",
}
_POI_KEYS = ("amenity", "shop", "tourism", "leisure")


def _place_type(row: Any) -> tuple[str, str | None, str, str]:
    """(place type, template category, OSM key, OSM value) of a POI row."""
    for key in _POI_KEYS:
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            value = value.split(";")[0].strip()
            if (key, value) in OSM_CATEGORIES:
                return (*OSM_CATEGORIES[(key, value)], key, value)
    for key in _POI_KEYS:
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            label = value.split(";")[0].strip().replace("_", " ")
            if label.lower() in ("yes", "store", "shop"):
                label = "other"
            return f"{_FALLBACK_TOP[key]}|{label[:1].upper()}{label[1:]}", None, key, value
    return "Public Facility|Other", None, "", ""


def _extra_tags(row: Any) -> dict[str, str]:
    tags = row.get("tags")
    if isinstance(tags, str):
        try:
            tags = json.loads(tags)
        except ValueError:
            tags = None
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def _osm_tag_groups(row: Any, extra: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Structured tags OSM states (the real part of `places.tag`)."""

    def get(k: str) -> str | None:
        v = row.get(k) if k in row else None
        v = v if isinstance(v, str) and v else extra.get(k)
        return v if v and v != "None" else None

    groups: list[tuple[str, list[str]]] = []
    cuisine = get("cuisine")
    if cuisine:
        groups.append(("Cuisine", [c.strip().replace("_", " ").capitalize() for c in cuisine.split(";") if c.strip()]))
    facility = []
    if get("outdoor_seating") == "yes":
        facility.append("Outdoor seating")
    if get("internet_access") in ("wlan", "yes", "wifi"):
        facility.append("WiFi")
    if get("wheelchair") == "yes":
        facility.append("Wheelchair access")
    if get("takeaway") in ("yes", "only"):
        facility.append("Takeaway")
    if facility:
        groups.append(("Facility", facility))
    diet = [
        f"{k.split(':')[1].capitalize()} options"
        for k in ("diet:vegan", "diet:vegetarian", "diet:gluten_free")
        if get(k) in ("yes", "only")
    ]
    if diet:
        groups.append(("Diet", diet))
    return groups


def _stable_place_id(osm_type: str, osm_id: int, taken: set[str]) -> str:
    """AMap-like `B0XXXXXXXX`, derived from the OSM element so rebuilds keep ids."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    salt = 0
    while True:
        h = int.from_bytes(hashlib.sha1(f"{osm_type}/{osm_id}/{salt}".encode()).digest()[:8], "big")
        pid = "B0" + "".join(alphabet[(h // 36**i) % 36] for i in range(8))
        if pid not in taken:
            taken.add(pid)
            return pid
        salt += 1
