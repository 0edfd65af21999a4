"""`geoeval score maptab <results.json> [more.json ...] --output <scored.json>`: score a results file
in the MapTab authors' format exactly as their evaluator does (`maptab_infer/evaluate.py`,
`evaluate_planning`), so that a model run outside geoeval is scored the same way.

Input: one or more JSON files, each a list of test-set items (as in `<scenario>/data/test_set/`)
with the model's answer added as `response`, a route string "A-B(transfer)-C". Like the authors,
an item without `response` falls back to `raw_response` (for `benchmark_variant: qa_guided` items,
the route inside `<route_begin>`/`<response_begin>` tags or a whole code fence).

Per item, as the authors' evaluator (SPEC.md, "The authors' route scorer"):
* the response is split on "-"; two stations match when difflib's ratio of the stripped,
  lower-cased names is >= 0.5;
* `all_acc` (EMA, 0/1): same length as some reference and every position matching, where a
  position with "(transfer)" on either side must be identical (in every scenario);
* `part_acc` (PMA): matched prefix / reference length, best reference, rounded to 4 decimals;
* `Difficulty_score`: the item's weight, Map_Difficulty + Query_Difficulty with Easy=1, Medium=2,
  Hard=3 (0 if either is unknown); the DS total is the sum of the weights of the exact matches;
* `parsed_route`: the route that was scored (the authors add it too).

The items are written back, in input order, with those fields added, to `--output`; the summary
(`all_acc`, `part_acc`, `difficulty_score_total`, `count`, plus per scenario and per file) goes to
`<output stem>.summary.json`, as the authors write `<output>.summary.json`. The averages and the DS
total are printed, split by scenario (told apart by the item keys) when the files mix them.

Bad input. The line between a bad *file* and a bad *item*:

* A file that cannot be read as a JSON list of items stops the command, before anything is
  scored or written, with exactly one line `geoeval: error: <file>: <what is wrong>` on stderr and
  exit status 2: missing, a directory, unreadable, larger than 256 MiB, not UTF-8 (raw bytes of a
  surrogate or of another encoding), not JSON (raw NUL or control bytes outside a string, an
  integer of more than 4300 digits, truncated text), nested deeper than 32 levels (items are 3
  deep: list > item > routes), or JSON of another shape than a list (an object, a string however
  long, a number).
* Inside a good file an item is scored, never fatal. Text the evaluator cannot store (lone UTF-16
  surrogates such as `"\ud800"`, NUL and other control characters, in `response` or any other
  field) is replaced by U+FFFD (`geoeval.core.text.clean_text`) and the item is scored as cleaned,
  with a warning naming the fields; a replaced character never matches a station, so a response
  scores as if that character were a typo. A `response` that is not a string (a number, a list) is
  scored as its text, with a warning; a huge response is scored like any other. An entry that is
  not a JSON object is reported and left out; an item the evaluator can still score (no response,
  no usable references, an unknown difficulty) is scored as the authors' evaluator scores it (0
  where it must) and reported on stderr.
"""

from __future__ import annotations

import argparse
import json
import reprlib
import sys
from pathlib import Path
from typing import Any

from geoeval.api import clean_text, clean_value, is_clean, nesting_depth
from geoeval.cli.help import HelpWithExamples, examples
from geoeval.suites.maptab import metrics
from geoeval.suites.maptab.authors.format import scenario_of_item

PROG = "geoeval score maptab"
ADDED_FIELDS = ("parsed_route", "all_acc", "part_acc", "Difficulty_score")
# The authors' test sets are a few MB at most; a bound keeps a wrong file from exhausting memory.
MAX_FILE_BYTES = 256 * 2**20
# Items are 3 levels deep (list > item > routes); the bound stops a hostile file before str() or
# json.dumps of its values can recurse past Python's limit.
MAX_NESTING = 32

# Values quoted in warnings: short, one line, whatever their size or type.
_BRIEF = reprlib.Repr()
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlevel = 60, 60, 2


class InputError(Exception):
    """A results file that cannot be scored at all."""


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _read_results(path: Path) -> list[Any]:
    """The entries of one results file, or InputError saying in one line why the file is unusable."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    if path.is_file() and size > MAX_FILE_BYTES:
        raise InputError(f"{path}: {size} bytes, larger than the {MAX_FILE_BYTES // 2**20} MiB a results file may be")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a results file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested deeper than {MAX_NESTING} levels (test-set items are 3 deep)") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        reason = " ".join(str(exc).split(";")[0].split())[:120]
        raise InputError(f"{path}: not valid JSON ({reason})") from None
    if nesting_depth(data, MAX_NESTING) > MAX_NESTING:
        raise InputError(f"{path}: JSON nested deeper than {MAX_NESTING} levels (test-set items are 3 deep)")
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON list of test-set items, got a JSON {_json_type(data)}")
    return data


def _has_unclean_text(value: Any) -> bool:
    """Whether a string anywhere in `value` (keys included) holds a lone surrogate or a control
    character that `clean_text` would replace."""
    if isinstance(value, str):
        return not is_clean(value)
    if isinstance(value, dict):
        return any(_has_unclean_text(k) or _has_unclean_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_unclean_text(v) for v in value)
    return False


def clean_item(item: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`item` with every string cleaned (lone surrogates and control characters -> U+FFFD), and the
    problems to report: which fields held such text."""
    dirty = [k for k, v in item.items() if _has_unclean_text(k) or _has_unclean_text(v)]
    if not dirty:
        return item, []
    names = ", ".join(_BRIEF.repr(clean_text(k)) for k in dirty[:5]) + (", ..." if len(dirty) > 5 else "")
    return clean_value(item), [
        f"lone surrogates or control characters in {names} replaced by U+FFFD; scored as cleaned"
    ]


def _tagged_route(value: Any) -> str:
    """The authors' `route_from_response`: a <route_begin>/<response_begin> tag, else a whole code
    fence, else the stripped text."""
    text = "" if value is None else str(value).strip()
    for tag in ("route", "response"):
        # linear in the text: a lazy regex backtracks for hours on a megabyte of unclosed tags
        found = metrics.tagged_texts(text, f"<{tag}_begin>", f"<{tag}_end>")
        if found:
            return found[0].strip()
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):  # a whole code fence
        inner = text[3:-3]
        return (inner[4:] if inner.startswith("text") else inner).strip()
    return text


def _response(item: dict[str, Any]) -> tuple[str, str | None]:
    """(the route string to score, a problem note or None), as the authors pick the response."""
    response = item.get("response")
    if isinstance(response, str):
        return response, None
    if response is not None:
        return str(response), f"'response' is a JSON {_json_type(response)}, not a route string: scored as its text"
    if "raw_response" not in item:
        return "", "no 'response' (nor 'raw_response'): scored 0"
    raw = item.get("raw_response")
    if item.get("benchmark_variant") == "qa_guided":
        return _tagged_route(raw), None
    return "" if raw is None else str(raw), None


def score_item(item: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The item with the authors' fields added, and the problems worth reporting."""
    problems: list[str] = []
    response, note = _response(item)
    if note:
        problems.append(note)
    routes = item.get("routes")
    if not isinstance(routes, list) or not routes or not all(isinstance(r, str) for r in routes):
        # the authors' evaluator would find no reference (or crash on non-strings): no match
        problems.append(f"'routes' is not a non-empty list of route strings (got {_BRIEF.repr(routes)}): scored 0")
        routes = []
    predicted = metrics.split_route(response)
    exact = int(metrics.ema(response, routes, transfer_rule=True)) if routes else 0
    partial = metrics.pma(response, routes) if routes else 0.0
    map_level = item.get("Map_Difficulty", item.get("map_difficulty", ""))
    query_level = item.get("Query_Difficulty", item.get("query_difficulty", ""))
    weight = metrics.difficulty_weight(map_level, query_level)
    if weight == 0:
        problems.append(
            f"difficulty {_BRIEF.repr(map_level)}/{_BRIEF.repr(query_level)} is not Easy/Medium/Hard: "
            "Difficulty_score 0"
        )
    scored = dict(item)
    scored.update(
        {"parsed_route": "-".join(predicted), "all_acc": exact, "part_acc": partial, "Difficulty_score": weight}
    )
    return scored, problems


def summarize(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The authors' summary of scored items: mean all_acc, mean part_acc, DS total, count."""
    n = len(items)
    return {
        "all_acc": sum(it["all_acc"] for it in items) / n if n else 0.0,
        "part_acc": sum(it["part_acc"] for it in items) / n if n else 0.0,
        "difficulty_score_total": sum(it["Difficulty_score"] * it["all_acc"] for it in items),
        "count": n,
    }


def _shown(path: Path) -> str:
    """A path as text any stream takes (a file name of undecodable bytes holds surrogates)."""
    return clean_text(str(path))


def score_files(paths: list[Path]) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """(scored items of every file in order, summary, problem lines). Raises InputError for a file
    that is not a JSON list."""
    loaded = [(p, _read_results(p)) for p in paths]  # every file is checked before any scoring
    scored_all: list[dict[str, Any]] = []
    per_file: dict[str, dict[str, Any]] = {}
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    problems: list[str] = []
    for path, entries in loaded:
        scored_file = []
        for i, entry in enumerate(entries):
            where = f"{_shown(path)}: item {i}"
            if not isinstance(entry, dict):
                problems.append(f"{where}: not a JSON object ({type(entry).__name__}); left out")
                continue
            entry, text_problems = clean_item(entry)
            scored, item_problems = score_item(entry)
            problems.extend(f"{where}: {p}" for p in text_problems + item_problems)
            scenario = scenario_of_item(entry)
            if scenario is None:
                problems.append(
                    f"{where}: keys name no scenario (station_1/station_2 or spot_1/spot_2); counted as 'unknown'"
                )
            by_scenario.setdefault(scenario or "unknown", []).append(scored)
            scored_file.append(scored)
        per_file[_shown(path)] = summarize(scored_file)
        scored_all.extend(scored_file)
    summary = summarize(scored_all)
    summary["by_scenario"] = {k: summarize(v) for k, v in sorted(by_scenario.items())}
    summary["by_file"] = per_file
    return scored_all, summary, problems


def _table(summary: dict[str, Any]) -> str:
    rows = [(name, s) for name, s in summary["by_scenario"].items()]
    if len(rows) != 1:
        rows.append(("all", summary))
    if len(summary["by_file"]) > 1:
        rows += [(Path(f).name, s) for f, s in summary["by_file"].items()]
    width = max([len("scope")] + [len(name) for name, _ in rows])
    lines = [f"{'scope':<{width}}  {'items':>5}  {'EMA (all_acc)':>13}  {'PMA (part_acc)':>14}  {'DS total':>8}"]
    for name, s in rows:
        lines.append(
            f"{name:<{width}}  {s['count']:>5}  {s['all_acc']:>13.4f}  {s['part_acc']:>14.4f}  "
            f"{s['difficulty_score_total']:>8}"
        )
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """`text` cleaned and on one line (a path or a value may hold line breaks)."""
    return " ".join(clean_text(text).splitlines())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Score MapTab route-planning results in the authors' format (test-set items plus a "
        "'response' route string) exactly as the authors' evaluator does.",
        epilog=examples("score maptab"),
        formatter_class=HelpWithExamples,
    )
    parser.add_argument("results", nargs="+", type=Path, help="results file(s): JSON lists of test-set items")
    parser.add_argument(
        "--output",
        "-o",
        required=True,
        type=Path,
        help="where to write the scored items (a JSON list); the summary goes next to it",
    )
    return parser


def score(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        scored, summary, problems = score_files(list(args.results))
    except InputError as exc:
        print(f"geoeval: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"geoeval: warning: {_one_line(line)}", file=sys.stderr)
    output: Path = args.output
    summary_path = output.with_name(output.stem + ".summary.json")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(scored, ensure_ascii=False, indent=2), encoding="utf-8")
        summary_path.write_text(
            json.dumps({**summary, "problems": problems}, ensure_ascii=False, indent=2), encoding="utf-8"
        )
    except OSError as exc:
        print(f"geoeval: error: cannot write {_shown(output)}: {_one_line(str(exc.strerror or exc))}", file=sys.stderr)
        return 2
    print(_table(summary))
    print(f"scored {summary['count']} item(s) -> {_shown(output)} (summary: {clean_text(summary_path.name)})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(score())
