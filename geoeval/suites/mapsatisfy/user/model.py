"""Generated users: a profile with behaviour statistics (`UserModel`: counts per option of each
decision dimension in an earlier and a recent 30-day window), seeded by `generate_user`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from geoeval.suites.mapsatisfy.generate.poi_city import City

# decision dimension -> options; counts per option in an earlier and a recent 30-day window
BEHAVIOUR_DIMENSIONS = {
    "price_level": ("实惠", "中等", "高端"),
    "rating": ("高评分", "不限"),
    "travel_mode": ("驾车", "地铁", "打车"),
}
MODE_API = {"驾车": "driving", "地铁": "transit", "打车": "taxi"}
PRICE_CAP = {"实惠": 60, "中等": 120, "高端": 400}


@dataclass(frozen=True)
class UserModel:
    uid: str
    home_city: str
    has_car: bool
    # dimension -> option -> (earlier window count, recent window count)
    behaviour: dict[str, dict[str, tuple[int, int]]]

    def totals(self, dim: str) -> dict[str, int]:
        return {o: e + r for o, (e, r) in self.behaviour[dim].items()}

    def top(self, dim: str) -> str:
        tot = self.totals(dim)
        return max(tot, key=lambda o: (tot[o], o))

    def preferences(self) -> dict[str, dict[str, float]]:
        out = {}
        for dim in self.behaviour:
            tot = self.totals(dim)
            n = sum(tot.values())
            out[dim] = {o: round(c / n, 3) for o, c in tot.items()}
        return out

    def profile(self, locality: str) -> dict[str, Any]:
        prefs = self.preferences()
        bits = [
            f"常住{self.home_city.split('/')[-1]}",
            "有车" if self.has_car else "无车",
            f"消费偏好{self.top('price_level')}",
            f"出行习惯{self.top('travel_mode')}",
        ]
        return {
            "summary": "；".join(bits),
            "attributes": {"has_car": self.has_car, "home_city": self.home_city, "locality": locality},
            "preferences": prefs,
        }

    def action_summary(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "windows": ["前30天", "近30天"],
            "behaviour": {
                d: {o: {"前30天": e, "近30天": r} for o, (e, r) in opts.items()} for d, opts in self.behaviour.items()
            },
        }


def generate_user(rng: np.random.Generator, index: int, city: City, seed: int) -> UserModel:
    behaviour = {}
    for dim, options in BEHAVIOUR_DIMENSIONS.items():
        favourite = int(rng.integers(len(options)))
        behaviour[dim] = {
            o: (
                int(rng.integers(6, 14)) if i == favourite else int(rng.integers(0, 5)),
                int(rng.integers(4, 16)) if i == favourite else int(rng.integers(0, 5)),
            )
            for i, o in enumerate(options)
        }
    home = city.name if rng.random() < 0.8 else "上海市/上海市"
    uid = hashlib.sha1(f"{seed}:{index}".encode()).hexdigest()[:16]
    return UserModel(uid=uid, home_city=home, has_car=bool(rng.random() < 0.55), behaviour=behaviour)
