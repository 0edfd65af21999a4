"""Label language of synthetic maps (appendix G.4's language ablation): deterministic Chinese
names for geoeval's English-like synthetic names, and the font that can draw them.

`localize_map(m, "zh")` renames every station and line of a map; everything downstream (tables,
questions, references, rendering) then uses the Chinese names, as the paper's Chinese maps carry
Chinese names in their tables too (the authors' Angkor Wat sample does).

Transliteration (`transliterate`), a fixed table, no randomness:
* a trailing place word ("Park", "Square", "Airport") is translated (`PLACE_WORDS`);
* a known English ending of the root ("-ton", "-ford", "-wick") has a fixed rendering (`ENDINGS`);
* the rest (doubled consonants read once) is split into (consonants, vowels) groups; a consonant with a following vowel becomes
  one syllable character from `SYLLABLES` (its row) and the vowel's column (a, e, i, o, u; "y"
  after a consonant reads as "i"), a consonant without one a coda character (`CODAS`), a lone
  vowel a vowel character.
The scorers accept a station name at difflib similarity >= 0.5, so the names of one map must stay
pairwise below that, as the English ones are (generator). When a name comes out too similar to an
earlier one (or equal), it is transliterated again with variant k = 1, 2, ... (the vowel columns
rotated by k, and the ending spelled by syllables instead of the fixed table); failing
`MAX_VARIANTS` of those, with three syllable characters picked by a hash of the English name (plus
its translated place word), retried up to `MAX_HASHED` times; past that a GeoevalError says so.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import replace
from functools import cache
from pathlib import Path

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import Edge, Line, MetroMap

LANGUAGES = ("en", "zh")
SIMILARITY_LIMIT = 0.5
MAX_VARIANTS = 3
MAX_HASHED = 200

PLACE_WORDS = {
    "Park": "公园",
    "Square": "广场",
    "Cross": "十字",
    "Hill": "山",
    "Gate": "门",
    "Market": "市场",
    "Bridge": "桥",
    "Wharf": "码头",
    "Green": "绿地",
    "Heights": "高地",
    "Road": "路",
    "Lane": "巷",
    "Common": "公地",
    "Fields": "田",
    "Quay": "埠",
    "Row": "街",
    "Yard": "院",
    "Vale": "谷",
    "Abbey": "修道院",
    "Docks": "船坞",
    "Court": "苑",
    "Mills": "磨坊",
    "Halt": "小站",
    "Circus": "环岛",
    "Junction": "枢纽",
    "Plaza": "中心",
    "Terrace": "台",
    "Walk": "步道",
    "Airport": "机场",
    "Station": "火车站",
}
ENDINGS = {
    "thorpe": "索普",
    "worth": "沃思",
    "field": "菲尔德",
    "hurst": "赫斯特",
    "stead": "斯特德",
    "ridge": "里奇",
    "combe": "库姆",
    "ford": "福德",
    "wick": "威克",
    "mere": "米尔",
    "dale": "代尔",
    "well": "韦尔",
    "more": "莫尔",
    "bury": "伯里",
    "holm": "霍尔姆",
    "side": "赛德",
    "ton": "顿",
    "ley": "利",
    "ham": "汉姆",
    "low": "洛",
    "den": "登",
    "by": "比",
}
# consonant -> characters for the vowels a, e, i, o, u
SYLLABLES = {
    "b": "巴贝比博布",
    "p": "帕佩皮波普",
    "m": "马梅米莫穆",
    "f": "法费菲佛富",
    "d": "达德迪多杜",
    "t": "塔特蒂托图",
    "n": "纳内尼诺努",
    "l": "拉莱利洛卢",
    "g": "加格吉戈古",
    "k": "卡凯基科库",
    "c": "卡凯基科库",
    "q": "卡凯基科库",
    "h": "哈赫希霍胡",
    "j": "贾杰济焦朱",
    "r": "腊雷里罗鲁",
    "s": "萨塞西索苏",
    "x": "萨塞西索苏",
    "sh": "沙谢施肖舒",
    "ch": "查切奇乔丘",
    "th": "撒瑟锡梭疏",
    "ph": "法费菲佛富",
    "v": "瓦韦维沃伍",
    "w": "哇威薇窝吴",
    "y": "亚耶伊约尤",
    "z": "扎泽齐佐祖",
}
VOWELS = "阿埃伊奥乌"
CODAS = {
    "b": "布",
    "p": "普",
    "m": "姆",
    "f": "夫",
    "d": "德",
    "t": "特",
    "n": "恩",
    "l": "尔",
    "g": "格",
    "k": "克",
    "c": "克",
    "q": "克",
    "h": "赫",
    "j": "奇",
    "r": "尔",
    "s": "斯",
    "sh": "什",
    "ch": "奇",
    "th": "斯",
    "ph": "夫",
    "v": "夫",
    "w": "乌",
    "y": "伊",
    "z": "兹",
    "x": "克斯",
}
LINE_COLOURS = {
    "Red": "红",
    "Blue": "蓝",
    "Green": "绿",
    "Orange": "橙",
    "Purple": "紫",
    "Pink": "粉",
    "Teal": "青",
    "Brown": "棕",
    "Yellow": "黄",
    "Navy": "藏青",
}
_DIGRAPHS = ("sh", "ch", "th", "ph")
_GROUP = re.compile(r"([^aeiou]*)([aeiou]*)")
_VOWEL_INDEX = {"a": 0, "e": 1, "i": 2, "o": 3, "u": 4, "y": 2}


def _consonants(cluster: str) -> list[str]:
    out, i = [], 0
    while i < len(cluster):
        if cluster[i : i + 2] in _DIGRAPHS:
            out.append(cluster[i : i + 2])
            i += 2
        else:
            out.append(cluster[i])
            i += 1
    return out


def _spell(root: str, variant: int) -> str:
    text = ""
    low = root.lower()
    # "y" after a consonant is a vowel ("by" -> b + i)
    low = re.sub(r"(?<=[^aeiouy])y", "i", low)
    low = re.sub(r"([^aeiou])\1", r"\1", low)  # a doubled consonant is one sound ("tt" -> "t")
    for cons, vowels in _GROUP.findall(low):
        if not cons and not vowels:
            continue
        letters = [c for c in _consonants(cons) if c.isalpha()]
        if vowels:
            col = (_VOWEL_INDEX[vowels[0]] + variant) % 5
            if letters:
                *lead, last = letters
                text += "".join(CODAS.get(c, "") for c in lead)
                text += SYLLABLES.get(last, VOWELS)[col]
            else:
                text += VOWELS[col]
        else:
            text += "".join(CODAS.get(c, "") for c in letters)
    return text


def transliterate(name: str, variant: int = 0) -> str:
    """The Chinese name of an English-like synthetic name (see the module docstring)."""
    words = name.split()
    suffix = ""
    if len(words) > 1 and words[-1] in PLACE_WORDS:
        suffix = PLACE_WORDS[words[-1]]
        words = words[:-1]
    root = "".join(words)
    low = root.lower()
    ending = ""
    if variant == 0:
        for end in sorted(ENDINGS, key=len, reverse=True):
            if low.endswith(end) and len(low) > len(end):
                ending = ENDINGS[end]
                root = root[: -len(end)]
                break
    return _spell(root, variant) + ending + suffix


def _too_similar(a: str, b: str) -> bool:
    return (
        a == b
        or difflib.SequenceMatcher(None, a, b).ratio() >= SIMILARITY_LIMIT
        or difflib.SequenceMatcher(None, b, a).ratio() >= SIMILARITY_LIMIT
    )


_SYLLABLE_POOL = "".join(dict.fromkeys("".join(SYLLABLES.values())))


def hashed_name(name: str, attempt: int) -> str:
    """The last resort: three syllable characters picked by a hash of the English name (plus its
    translated place word), deterministic like everything here."""
    digest = hashlib.sha256(f"{name}/{attempt}".encode()).digest()
    words = name.split()
    suffix = PLACE_WORDS.get(words[-1], "") if len(words) > 1 else ""
    return "".join(_SYLLABLE_POOL[b % len(_SYLLABLE_POOL)] for b in digest[:3]) + suffix


def chinese_names(names: list[str]) -> dict[str, str]:
    """English -> Chinese for the names of one map, pairwise dissimilar (module docstring)."""
    out: dict[str, str] = {}
    for name in names:
        candidates = [transliterate(name, v) for v in range(MAX_VARIANTS)]
        candidates += [hashed_name(name, attempt) for attempt in range(MAX_HASHED)]
        for zh in candidates:
            if not any(_too_similar(zh, other) for other in out.values()):
                out[name] = zh
                break
        else:
            raise GeoevalError(
                f"cannot give {name!r} a Chinese name dissimilar to the other stations' "
                f"({len(candidates)} candidates tried)"
            )
    return out


def line_name(name: str) -> str:
    """ "Red Line" -> "红线"; other names stay as they are."""
    colour = name[: -len(" Line")] if name.endswith(" Line") else ""
    return f"{LINE_COLOURS[colour]}线" if colour in LINE_COLOURS else name


def localize_map(m: MetroMap, language: str) -> MetroMap:
    """`m` with station and line names in `language` ("en" returns `m` itself)."""
    if language not in LANGUAGES:
        raise GeoevalError(f"language must be one of {LANGUAGES}, got {language!r}")
    if language == "en":
        return m
    station = chinese_names(list(m.stations))
    line = {ln: line_name(ln) for ln in {*m.lines, *(x for e in m.edges for x in e.lines)}}
    stations = {
        station[n]: replace(s, name=station[n], lines=tuple(line[x] for x in s.lines)) for n, s in m.stations.items()
    }
    edges = [
        Edge(station[e.a], station[e.b], tuple(line[x] for x in e.lines), e.time, e.price, e.comfort, e.reliability)
        for e in m.edges
    ]
    lines = {
        line[n]: Line(line[n], ln.color, tuple(station[s] for s in ln.stations), ln.loop) for n, ln in m.lines.items()
    }
    return MetroMap(
        name=m.name,
        scenario=m.scenario,
        stations=stations,
        edges=edges,
        lines=lines,
        width=m.width,
        height=m.height,
        country=m.country,
    )


# --------------------------------------------------------------------------------------------
# Fonts

CJK_FONT_ENV = "GEOEVAL_CJK_FONT"
# where Debian's fonts-noto-cjk and other common packages put a CJK font
_SYSTEM_CJK_FONTS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
)


@cache
def cjk_font() -> tuple[str, int] | None:
    """(path, face index) of a font with Simplified Chinese glyphs, or None when there is none.

    Looked for in order: the file `$GEOEVAL_CJK_FONT` names; the pip package `noto-cjk-sans-otc`
    (Noto Sans CJK, OFL; `pip install noto-cjk-sans-otc`); Debian's `fonts-noto-cjk`
    (`apt-get install fonts-noto-cjk`) and WenQuanYi. In a .ttc collection the face whose name says
    SC (Simplified Chinese) is taken."""
    candidates: list[str] = []
    if os.environ.get(CJK_FONT_ENV):
        candidates.append(os.environ[CJK_FONT_ENV])
    try:
        import noto_cjk_sans_otc

        candidates += [str(p) for p in sorted(Path(noto_cjk_sans_otc.__file__).parent.glob("*.tt[cf]"))]
    except ImportError:
        pass
    candidates += list(_SYSTEM_CJK_FONTS)
    for path in candidates:
        if Path(path).is_file():
            index = _simplified_face(path)
            if index is not None:
                return path, index
    return None


def _simplified_face(path: str) -> int | None:
    from PIL import ImageFont

    fallback = None
    for index in range(16):
        try:
            font = ImageFont.truetype(path, 20, index=index)
        except OSError:
            break
        family, _style = font.getname()
        family = family or ""  # a font without a family name in its name table: None
        if font.getbbox("中")[2] <= 0:
            continue
        if fallback is None:
            fallback = index
        if " SC" in f" {family} " or family.endswith("SC") or "Simplified" in family:
            return index
        if not path.endswith(".ttc"):
            break
    return fallback
