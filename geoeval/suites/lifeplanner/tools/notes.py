"""search_notes and note_detail over the notes and their comments."""

from __future__ import annotations

from typing import Any

from geoeval.suites.lifeplanner.tools.arguments import (
    DATA_ENGINE_LIMITS,
    MAX_COMMENTS,
    STANDARD_LIMITS,
    ToolParameterError,
    ToolResult,
    _quote,
    _text,
    _tool,
)
from geoeval.suites.lifeplanner.tools.city import (
    COMMENT_FIELDS,
    NOTE_FULL,
    NOTE_LIGHT,
    City,
    _list_payload,
    _record,
)
from geoeval.suites.lifeplanner.tools.keyword_logic import (
    KeywordSyntaxError,
    keyword_sql,
    parse_keyword_logic,
)


def _comments(city: City, note_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    rows = (
        city.cursor()
        .execute(
            "SELECT note_id, comment_id, time, content, like_count FROM ("
            " SELECT *, row_number() OVER (PARTITION BY note_id ORDER BY like_count DESC, time, comment_id) AS k"
            " FROM comments WHERE list_contains(?, note_id)) WHERE k <= ? ORDER BY note_id, k",
            [note_ids, MAX_COMMENTS],
        )
        .fetchall()
    )
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in note_ids}
    for r in rows:
        out[r[0]].append(_record(COMMENT_FIELDS, r[1:]))
    return out


_NOTE_SQL = {f: ('"desc"' if f == "desc" else f) for f in NOTE_FULL}


@_tool
def search_notes(city: City, keyword: Any, *, toolset: str = "standard") -> ToolResult:
    """Notes matching the keyword logic, most liked first. Standard: light list; data engine: full
    posts with their comments."""
    if not isinstance(keyword, str):
        raise ToolParameterError(f"keyword must be a string, got {type(keyword).__name__}.")
    text = keyword.strip()
    if not text:
        raise ToolParameterError("keyword is required and must not be empty.")
    try:
        ast = parse_keyword_logic(text)
    except KeywordSyntaxError as exc:
        raise ToolParameterError(
            f"Invalid keyword logic: {exc}. Separate keywords with AND / OR / NOT, e.g. 'coffee AND quiet NOT crowded'."
        ) from None
    pred, params = keyword_sql(ast)
    fields = NOTE_LIGHT if toolset == "standard" else NOTE_FULL
    limit = (STANDARD_LIMITS if toolset == "standard" else DATA_ENGINE_LIMITS)["search_notes"]
    cols = ", ".join(_NOTE_SQL[f] for f in fields)
    rows = (
        city.cursor()
        .execute(
            f"SELECT {cols}, COUNT(*) OVER () FROM notes WHERE {pred} ORDER BY liked_count DESC, note_id LIMIT ?",
            [*params, limit],
        )
        .fetchall()
    )
    total = rows[0][-1] if rows else 0
    results = [_record(fields, r[:-1]) for r in rows]
    if toolset != "standard" and results:
        comments = _comments(city, [r["note_id"] for r in results])
        for r in results:
            r["comments"] = comments[r["note_id"]]
    return _list_payload(
        results, total, limit, "notes", "Try fewer or shorter keywords, OR instead of AND, or a synonym."
    )


@_tool
def note_detail(city: City, note_id: Any) -> ToolResult:
    """One note with its description and up to 10 comments (most liked first)."""
    nid = _text("note_id", note_id, required=True)
    cols = ", ".join(_NOTE_SQL[f] for f in NOTE_FULL)
    row = city.cursor().execute(f"SELECT {cols} FROM notes WHERE note_id = ?", [nid]).fetchone()
    if row is None:
        raise ToolParameterError(f"note_id '{_quote(nid)}' was not found. Use a note_id returned by search_notes.")
    rec = _record(NOTE_FULL, row)
    rec["comments"] = _comments(city, [nid])[nid]
    return ToolResult(rec, "ok")
