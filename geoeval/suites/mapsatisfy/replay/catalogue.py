"""The catalogue of MapSatisfyBench's map-service tools: names, descriptions and parameters as in
the authors' public demo (`TOOL_SPECS`), and the parameter aliases their recorded calls use
(`ARGUMENT_ALIASES`). Declarative data: the sandbox checks calls against it and the Inspect
adapter turns it into tool definitions."""

from __future__ import annotations

from dataclasses import dataclass

#: The tools that read the user's profile (the evidence a profile-aware agent acquires)
PROFILE_TOOLS = ("search_user_profile", "search_user_action_summary")


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: tuple[str, ...]  # JSON-schema types; the authors accept strings for numbers
    description: str
    required: bool = False
    items: str | None = None  # the JSON-schema type of an array's items (providers require one)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[ParamSpec, ...]

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


_STR = ("string",)
_NUM = ("number", "string")  # coordinates, radii: the demo passes both 121.55 and "121.55"
_INT = ("integer", "string")
_BOOL = ("boolean", "string")
_LIST = ("array", "string")  # the demo passes lists both as JSON and as JSON text
_ANY_MODE = ("array", "string")


def _p(
    name: str, types: tuple[str, ...], description: str, required: bool = False, items: str | None = None
) -> ParamSpec:
    if "array" in types and items is None:
        items = "string"
    return ParamSpec(name, types, description, required, items)


def _coords(prefix: str, what: str, required: bool, lon: str = "lon", lat: str = "lat") -> list[ParamSpec]:
    return [
        _p(f"{prefix}{lon}", _NUM, f"{what} longitude", required),
        _p(f"{prefix}{lat}", _NUM, f"{what} latitude", required),
    ]


# Names and parameters of the authors' demo (SPEC.md), completed with the parameters their
# recorded calls carry (`request`, `route_type`, `*_datetime`, `range_meters`, `query_location`).
# `required` here is what the tool itself needs to run, not what a case's parameter_rules ask.
TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec(
            "search_poi",
            "Keyword search for places (POIs) in a city or region.",
            (
                _p("query", _STR, "one place keyword, e.g. a landmark or category", True),
                _p("cur_adcode", _STR, "city or district: adcode, citycode or Chinese city name"),
                _p("types", _STR, "POI type codes to restrict the search"),
                _p("city_limit", _BOOL, "true: only results inside cur_adcode"),
                _p("page_size", _INT, "results per page"),
                _p("page_num", _INT, "page number, from 1"),
            ),
        ),
        ToolSpec(
            "search_around_poi",
            "Search places of a category around a centre point.",
            (
                # not required: the demo records ten calls without a keyword (everything nearby)
                _p("query", _STR, "category or keyword to search around the centre"),
                _p("x", _NUM, "centre longitude", True),
                _p("y", _NUM, "centre latitude", True),
                _p("range", _INT, "search radius in metres (default 5000)"),
                _p("rating_range", _LIST, "rating interval, e.g. [4,5]", items="number"),
                _p(
                    "sort_rule",
                    _STR,
                    "0 relevance, 1 distance, 2 rating, 3 low price, 4 high price, "
                    "21/31/41 the hotel variants; the demo also passes 'distance', 'weight'",
                ),
                _p("general_price_range", _STR, "price interval per person"),
                _p("hotel_price_range", _STR, "hotel price interval"),
                _p("request", _STR, "free-text request (unused in the demo)"),
            ),
        ),
        ToolSpec(
            "search_poi_along_route",
            "Search places along the route between two points.",
            (
                *_coords("start_", "route start", True, "x", "y"),
                *_coords("end_", "route end", True, "x", "y"),
                _p("keywords", _STR, "category or keyword to search along the route", True),
                _p("route_type", _STR, "'0' driving, '2' walking"),
                _p("range", _INT, "buffer around the route in metres"),
            ),
        ),
        ToolSpec(
            "search_poi_around_multipoints",
            "Search places around several centre points (e.g. a home near both school and work).",
            (
                _p("pois", _LIST, "centre points, a list of {'x': lon, 'y': lat}", True, items="object"),
                _p("query", _STR, "category or keyword", True),
                _p("range_meters", _INT, "radius around each centre in metres (default 5000)"),
                _p("need_centrality_filter", _BOOL, "rank by balanced access to all centres"),
                _p("rating_range", _LIST, "rating interval, e.g. [4,5]", items="number"),
                _p("general_price_range", _STR, "price interval per person"),
                _p("hotel_price_range", _STR, "hotel price interval"),
            ),
        ),
        ToolSpec(
            "get_navigation",
            "Plan a route between two points for a travel mode.",
            (
                *_coords("start_", "start", True),
                *_coords("end_", "end", True),
                _p("start_name", _STR, "start name, for display"),
                _p("end_name", _STR, "end name, for display"),
                _p("start_poiid", _STR, "start POI id"),
                _p("end_poiid", _STR, "end POI id"),
                _p("via_points", _STR, "via points 'lon,lat;lon,lat'"),
                _p("via_name", _STR, "via point names, comma-separated"),
                _p("preferred_road_names", _STR, "roads to prefer"),
                _p("avoid_road_names", _STR, "roads to avoid"),
                _p(
                    "mode",
                    _ANY_MODE,
                    "travel mode(s): 驾车 (driving), 骑行 (cycling), 摩托车, 步行 (walking), "
                    "公交 (public transit), 货车 (truck)",
                ),
                _p("route_type", _STR, "route strategy code"),
                _p("start_datetime", _STR, "departure time"),
                _p("end_datetime", _STR, "arrival time"),
            ),
        ),
        ToolSpec(
            "get_sequential_navigation",
            "Plan the legs between ordered points.",
            (
                _p(
                    "points",
                    _LIST,
                    "ordered points, a list of {'lat': float, 'lon': float, 'name': str}",
                    True,
                    items="object",
                ),
            ),
        ),
        ToolSpec(
            "get_taxi_route_plan",
            "Estimate a ride-hailing trip (price, time, distance).",
            (
                *_coords("start_", "pick-up", True),
                *_coords("end_", "drop-off", True),
                _p("start_name", _STR, "pick-up name"),
                _p("end_name", _STR, "drop-off name"),
                _p("start_poi_id", _STR, "pick-up POI id"),
                _p("end_poi_id", _STR, "drop-off POI id"),
                _p("request", _STR, "free-text request (unused in the demo)"),
            ),
        ),
        ToolSpec(
            "optimize_visit_order",
            "Order several places into the shortest visiting sequence.",
            (
                _p("start_name", _STR, "start name"),
                *_coords("start_", "start", True),
                _p("end_name", _STR, "fixed end name"),
                *_coords("end_", "fixed end", False),
                _p("via_names", _STR, "places to visit, comma-separated names", False),
                _p("via_points", _STR, "places to visit, 'lon,lat;lon,lat'", True),
                _p(
                    "mode", _ANY_MODE, "the demo records 'fixed_end' | 'flexible_end'; the rules describe a travel mode"
                ),
            ),
        ),
        ToolSpec(
            "get_rgeo",
            "Reverse geocoding: the address and nearby places of a point.",
            (
                _p("x", _NUM, "longitude", True),
                _p("y", _NUM, "latitude", True),
                _p("range_meters", _INT, "radius for nearby places in metres"),
            ),
        ),
        ToolSpec("get_route_traffic_info", "Traffic events around a place.", (_p("poi_id", _STR, "POI id", True),)),
        ToolSpec(
            "get_weather",
            "Live weather and forecast for a place.",
            (
                _p("location", _STR, "city or district name", True),
                _p("date", _STR, "YYYY-MM-DD"),
                _p("whole", _BOOL, "true: the whole forecast"),
            ),
        ),
        ToolSpec(
            "route_station_info",
            "Bus or metro lines and stations of a city.",
            (
                _p("city", _STR, "city name", True),
                _p("lines", _STR, "line ids, comma-separated"),
                _p("line_nums", _STR, "line numbers, comma-separated, e.g. '11号线,12号线'"),
                _p("line_type", _STR, "公交 (bus) | 地铁 (metro)"),
                _p("stations", _STR, "station ids, comma-separated"),
                _p("station_type", _STR, "station type"),
                _p("station_names", _STR, "station names, comma-separated"),
            ),
        ),
        ToolSpec(
            "search_products_by_poiid", "Products or listings sold at a place.", (_p("poiid", _STR, "POI id", True),)
        ),
        ToolSpec(
            "restaurant_group_buy", "Group-buy deals of a restaurant.", (_p("poi_id", _STR, "restaurant POI id", True),)
        ),
        ToolSpec(
            "restaurant_reservation",
            "Table reservation at a restaurant.",
            (
                _p("poi_id", _STR, "restaurant POI id", True),
                _p("table_type", _STR, "e.g. 散台 (hall) | 包间 (private room)"),
                _p("people_num", _INT, "number of people"),
                _p("order_time", _STR, "reservation time"),
            ),
        ),
        ToolSpec(
            "scenic_ticket_transaction",
            "Tickets of a scenic spot.",
            (
                _p("sightName", _STR, "scenic spot name", True),
                _p("dateTime", _STR, "visit date"),
                _p("personNum", _INT, "number of visitors"),
                _p("ticketType", _STR, "ticket type"),
                _p("ticketSession", _STR, "time session"),
            ),
        ),
        ToolSpec(
            "search_train_or_flights_tickets",
            "Train or flight tickets between two places.",
            (
                _p("startPoiId", _STR, "departure station/airport POI id", True),
                _p("endPoiId", _STR, "arrival station/airport POI id", True),
                _p("travelType", _STR, "train | flight"),
                _p("startTime", _INT, "earliest departure, epoch milliseconds"),
                _p("endTime", _INT, "latest departure, epoch milliseconds"),
            ),
        ),
        ToolSpec(
            "fuel_payment",
            "Fuel products and payment at a filling station.",
            (
                _p("poi_id", _STR, "filling station POI id", True),
                _p("oil_num", _STR, "fuel grade"),
                _p("oil_gun", _STR, "pump number"),
                _p("oil_price", _STR, "price"),
            ),
        ),
        ToolSpec(
            "transaction_service",
            "Order a service or item.",
            (
                _p("itemName", _STR, "item name", True),
                _p("itemType", _STR, "item type"),
                _p("orderObject", _STR, "the object ordered for"),
            ),
        ),
        ToolSpec(
            "search_user_profile",
            "The user's profile: attributes and preference shares.",
            (_p("uid", _STR, "the user id from the context", True),),
        ),
        ToolSpec(
            "search_user_action_summary",
            "A summary of the user's map behaviour over the last months.",
            (_p("uid", _STR, "the user id from the context", True),),
        ),
        ToolSpec(
            "ainative_kuake_search",
            "General web search for facts the map tools do not hold (opening hours, tickets, reservations).",
            (
                _p("query", _STR, "the search question", True),
                _p("query_write", _STR, "expanded search terms, comma-separated"),
                _p("query_location", _STR, "city or district the question is about"),
            ),
        ),
    ]
}

# Parameter names the authors' recorded calls use for a catalogue parameter. Their recorder
# wrote `adiu` (the C.2 prompt's name for the user id) where the tools and rules say `uid`.
ARGUMENT_ALIASES: dict[str, dict[str, str]] = {
    "search_user_profile": {"adiu": "uid"},
    "search_user_action_summary": {"adiu": "uid"},
    "fuel_payment": {"oilgun": "oil_gun", "oilnum": "oil_num", "oilprice": "oil_price"},
}
