"""An answer parsed once, with real parsers, into the segments every suite reads candidates from.

`parse(text)` reads the answer with a CommonMark parser (markdown-it-py, with GitHub tables) and
Python's `json` decoder, after `normalise.nfkc`:

* a paragraph is one segment per line (`kind="line"`): models put one answer on a line;
* a heading is a segment (`"heading"`) and the section of every segment below it;
* a list item is a segment (`"item"`) of its list (`group`), with its number (`ordinal`), its
  depth, and the list's lead: the line just before the list ("**Route:**", "Options:");
* a table row is a segment (`"row"`) with its `cells` and the table's `header` (GitHub tables;
  `\\|` inside a cell is a pipe of the cell's text, not a column);
* a code block is one segment a line (`"code"`), with its info string (`info`);
* a JSON object or array anywhere, fenced, inline or the whole text, is a segment of its own
  (`"json"`, `value`), with the text before and after it on its lines (`prefix`, `suffix`): a
  JSON value is found by `json.JSONDecoder.raw_decode` at each `{` or `[`, non-empty, at most
  `MAX_JSON_DEPTH` deep; the lines it spans are not read again as text;
* text inside a blockquote is `quoted`; text between a suite's answer markers (MapTab's
  `<route_begin>` ... `<route_end>`) is `marked`.

Every segment's text is `normalise.plain` (emphasis and code marks gone) and keeps its place:
segments are in reading order (`index`), and `line` is the line of the answer it starts on.
Reading is bounded: an answer longer than `MAX_ANSWER_CHARS` is read from its end (where a long
reasoning puts the answer), and at most `MAX_JSON_ATTEMPTS` openers are tried as JSON.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from geoeval.core.reading.normalise import nfkc, strip_emphasis
from geoeval.core.text import nesting_depth

#: longer answers are read from their last this many characters
MAX_ANSWER_CHARS = 100_000
#: openers (`{`, `[`) tried as the start of a JSON value
MAX_JSON_ATTEMPTS = 2_000
#: no answer of any suite nests deeper
MAX_JSON_DEPTH = 100
# private-use characters standing for a suite's answer markers and for JSON values while markdown
# is parsed (an answer cannot contain them in a way that matters: they are removed from it first)
_MARK_OPEN, _MARK_CLOSE, _JSON_OPEN, _JSON_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
_PRIVATE = re.compile("[\ue000-\ue003]")
_PLACEHOLDER = re.compile(f"{_JSON_OPEN}(\\d+){_JSON_CLOSE}")


@dataclass(frozen=True)
class Segment:
    """One unit of an answer (module docstring)."""

    index: int
    kind: str  # line | heading | item | row | code | json
    text: str
    line: int = 0
    section: str = ""
    group: int = -1  # the list or table an item or a row belongs to
    ordinal: int | None = None
    depth: int = 0
    lead: str = ""  # for items and rows: the line before their list or table
    cells: tuple[str, ...] = ()
    header: tuple[str, ...] = ()
    info: str = ""
    quoted: bool = False
    marked: bool = False
    value: Any = None
    prefix: str = ""  # the text before it on its line (a line split at a JSON value or a marker)
    suffix: str = ""  # and after it


@dataclass
class Document:
    """An answer's segments in reading order, and what the parse had to bound."""

    segments: list[Segment] = field(default_factory=list)
    truncated: bool = False
    has_markers: bool = False

    def groups(self, kind: str) -> dict[int, list[Segment]]:
        """The lists (`kind="item"`) or tables (`"row"`) of the answer, each its segments in order."""
        out: dict[int, list[Segment]] = {}
        for seg in self.segments:
            if seg.kind == kind:
                out.setdefault(seg.group, []).append(seg)
        return out

    def previous(self, seg: Segment) -> Segment | None:
        return self.segments[seg.index - 1] if seg.index > 0 else None


def _json_values(text: str) -> list[tuple[int, int, Any]]:
    """(start, end, value) of the top-level JSON objects and arrays in `text` (module docstring)."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, int, Any]] = []
    attempts = 0
    end_of_last = -1
    for m in re.finditer(r"[\[{]", text):
        i = m.start()
        if i < end_of_last:
            continue
        attempts += 1
        if attempts > MAX_JSON_ATTEMPTS:
            break
        try:
            value, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            loose = _loose_value(text, i)
            if loose is None:
                continue
            value, end = loose
        if not isinstance(value, (dict, list)) or not value:
            continue
        if nesting_depth(value, MAX_JSON_DEPTH + 1) > MAX_JSON_DEPTH:
            end_of_last = end
            continue
        out.append((i, end, value))
        end_of_last = end
    return out


#: a value written loosely (Python's quotes and literals, a trailing comma) is read only this long
MAX_LOOSE_CHARS = 20_000
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_STRING = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def _closing(text: str, start: int) -> int | None:
    """Where the bracket opened at `start` closes (quotes respected), within MAX_LOOSE_CHARS."""
    pairs = {"{": "}", "[": "]"}
    stack: list[str] = []
    quote = ""
    escaped = False
    for k in range(start, min(len(text), start + MAX_LOOSE_CHARS)):
        ch = text[k]
        if quote:
            escaped = not escaped and ch == "\\"
            if ch == quote and not escaped:
                quote = ""
            continue
        if ch in ("'", '"'):
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in ("}", "]"):
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return k + 1
    return None


def _loose_value(text: str, start: int) -> tuple[Any, int] | None:
    """A JSON object or array written loosely, as models write it: Python's quotes and literals
    (`{'answer': True}`) or a trailing comma; read with `ast.literal_eval` (no code runs)."""
    end = _closing(text, start)
    if end is None:
        return None
    chunk = _TRAILING_COMMA.sub(r"\1", text[start:end])
    try:
        return json.loads(chunk), end
    except (json.JSONDecodeError, RecursionError):
        pass
    # JSON's literals as Python's, outside the strings
    parts = _STRING.split(chunk)
    words = {"true": "True", "false": "False", "null": "None"}
    python = "".join(
        p if k % 2 else re.sub(r"\b(?:true|false|null)\b", lambda w: words[w.group()], p) for k, p in enumerate(parts)
    )
    try:
        value = ast.literal_eval(python)
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return None
    return (value, end) if isinstance(value, (dict, list)) else None


def _mask(text: str, markers: Sequence[tuple[str, str]]) -> tuple[str, list[Any], bool]:
    """`text` with its markers and JSON values replaced by private-use placeholders."""
    has_markers = False
    for begin_tag, end_tag in markers:  # without case, each begin with the first end after it (linear)
        find_begin = re.compile(re.escape(begin_tag), re.IGNORECASE).search
        find_end = re.compile(re.escape(end_tag), re.IGNORECASE).search
        out: list[str] = []
        pos = 0
        while (opened := find_begin(text, pos)) is not None and (closed := find_end(text, opened.end())) is not None:
            out += [text[pos : opened.start()], _MARK_OPEN, text[opened.end() : closed.start()], _MARK_CLOSE]
            pos = closed.end()
            has_markers = True
        text = "".join(out) + text[pos:]
    values: list[Any] = []
    pieces: list[str] = []
    last = 0
    for start, end, value in _json_values(text):
        pieces.append(text[last:start])
        # a JSON value stays on the line it starts on: markdown must not split it
        pieces.append(f"{_JSON_OPEN}{len(values)}{_JSON_CLOSE}")
        pieces.append("\n" * text.count("\n", start, end))
        values.append(value)
        last = end
    pieces.append(text[last:])
    return "".join(pieces), values, has_markers


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _inline_text(token: Token) -> list[str]:
    """The lines of an inline token's text, markup taken away (links keep their text, images
    their alt text, code spans their code, line breaks end a line)."""
    lines = [""]
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            lines.append("")
        elif child.type in ("text", "code_inline"):
            lines[-1] += child.content
        elif child.type == "html_inline":
            if re.match(r"<br\s*/?>", child.content, re.IGNORECASE):
                lines.append("")
            else:
                lines[-1] += child.content
        elif child.type == "image":
            lines[-1] += child.content
    return lines


class _Builder:
    def __init__(self, values: list[Any]):
        self.values = values
        self.segments: list[Segment] = []
        self.section = ""
        self.marked = False
        self.groups = 0

    def add(self, kind: str, text: str, line: int, **fields: Any) -> None:
        """One segment per stretch of `text` between JSON placeholders and marker placeholders
        (which switch `marked` on and off), one per JSON value; each knows the text of its line
        before and after it (`prefix`, `suffix`)."""
        pieces: list[tuple[str, str, bool, Any]] = []  # (kind, text, marked, JSON value)
        for k, piece in enumerate(_PLACEHOLDER.split(text)):
            if k % 2 == 1:
                pieces.append(("json", "", self.marked, self.values[int(piece)]))
                continue
            current = ""
            for ch in piece:
                if ch in (_MARK_OPEN, _MARK_CLOSE):
                    pieces.append((kind, current, self.marked, None))
                    current = ""
                    self.marked = ch == _MARK_OPEN
                else:
                    current += ch
            pieces.append((kind, current, self.marked, None))
        texts = [_clean(t) for _k, t, _m, _v in pieces]
        for k, (piece_kind, _text, marked, value) in enumerate(pieces):
            if piece_kind != "json" and not texts[k]:
                continue
            own = fields if piece_kind != "json" else {f: v for f, v in fields.items() if f in _JSON_FIELDS}
            self.segments.append(
                Segment(
                    len(self.segments),
                    piece_kind,
                    texts[k],
                    line,
                    section=self.section,
                    marked=marked,
                    value=value,
                    prefix=" ".join(t for t in texts[:k] if t),
                    suffix=" ".join(t for t in texts[k + 1 :] if t),
                    **own,
                )
            )


_JSON_FIELDS = ("quoted", "group", "depth", "lead", "ordinal")


def _clean(text: str) -> str:
    return _PRIVATE.sub("", strip_emphasis(text)).strip()


def parse(text: str, markers: Sequence[tuple[str, str]] = ()) -> Document:
    """The document of an answer (module docstring); `markers`: the (begin, end) strings a suite's
    prompt asks the answer to mark itself with."""
    raw = _PRIVATE.sub("", nfkc(text))
    truncated = len(raw) > MAX_ANSWER_CHARS
    if truncated:
        raw = raw[-MAX_ANSWER_CHARS:]
    masked, values, has_markers = _mask(raw, markers)
    builder = _Builder(values)
    tokens = _markdown().parse(masked)
    quoted = 0
    lists: list[tuple[int, str, int]] = []  # (group, lead, depth) of the open lists
    item_ordinal: list[int | None] = []
    table: dict[str, Any] | None = None
    last_line_text = ""
    in_heading = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line = tok.map[0] if tok.map else 0
        if tok.type == "blockquote_open":
            quoted += 1
        elif tok.type == "blockquote_close":
            quoted -= 1
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            builder.groups += 1
            lists.append((builder.groups, last_line_text, len(lists)))
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif tok.type == "list_item_open":
            item_ordinal.append(int(tok.info) if tok.info.isdigit() else None)
        elif tok.type == "list_item_close":
            item_ordinal.pop()
        elif tok.type == "heading_open":
            in_heading = True
        elif tok.type == "heading_close":
            in_heading = False
        elif tok.type == "table_open":
            builder.groups += 1
            table = {"group": builder.groups, "lead": last_line_text, "header": (), "row": []}
        elif tok.type == "table_close":
            table = None
        elif tok.type == "tr_open" and table is not None:
            table["row"] = []
            table["line"] = line
        elif tok.type == "tr_close" and table is not None:
            cells = tuple(_clean(c) for c in table["row"])
            if not table["header"]:
                table["header"] = cells
            builder.add(
                "row",
                " | ".join(cells),
                table["line"],
                cells=cells,
                header=table["header"],
                group=table["group"],
                lead=table["lead"],
                quoted=quoted > 0,
            )
        elif tok.type == "inline" and table is not None and tokens[i - 1].type in ("th_open", "td_open"):
            table["row"].append(" ".join(_inline_text(tok)))
        elif tok.type == "inline":
            lines = _inline_text(tok)
            if in_heading:
                builder.section = _clean(" ".join(lines))
                builder.add("heading", builder.section, line, quoted=quoted > 0)
                last_line_text = builder.section
            else:
                fields: dict[str, Any] = {"quoted": quoted > 0}
                kind = "line"
                if item_ordinal and lists:
                    group, lead, depth = lists[-1]
                    kind = "item"
                    fields.update(group=group, lead=_clean(lead), depth=depth, ordinal=item_ordinal[-1])
                for k, text_line in enumerate(lines):
                    builder.add(kind, text_line, line + k, **fields)
                    if text_line.strip():
                        last_line_text = text_line
        elif tok.type in ("fence", "code_block"):
            for k, text_line in enumerate(tok.content.splitlines()):
                builder.add("code", text_line, line + 1 + k, info=tok.info.strip(), quoted=quoted > 0)
        elif tok.type == "html_block":
            for k, text_line in enumerate(tok.content.splitlines()):
                builder.add("line", text_line, line + k, quoted=quoted > 0)
        i += 1
    return Document(builder.segments, truncated, has_markers)
