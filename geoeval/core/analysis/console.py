"""Markdown for a console: tables wider than the terminal split into column blocks that repeat
the row labels (a metric's 95% interval column kept beside it), prose wrapped. The files keep the
full tables; what is printed fits TERMINAL_WIDTH columns.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

#: the widest line the console gets
TERMINAL_WIDTH = 120


def table_width(table: str) -> int:
    return max((len(line) for line in table.splitlines()), default=0)


def _cells(line: str) -> list[str]:
    """The cells of one pipe-table line (escaped pipes kept inside their cell)."""
    body = line.strip()[1:-1]
    cells, current, escaped = [], "", False
    for char in body:
        if char == "|" and not escaped:
            cells.append(current)
            current = ""
        else:
            current += char
        escaped = char == "\\" and not escaped
    cells.append(current)
    return [c.strip() for c in cells]


def _is_rule(row: Sequence[str]) -> bool:
    return all(cell and set(cell) <= {"-", ":"} for cell in row)


def _label_columns(rows: list[list[str]]) -> int:
    """How many leading columns label the rows (task, level): those with no number in the body."""
    body = [row for row in rows[1:] if not _is_rule(row)]

    def is_number(text: str) -> bool:
        try:
            float(text)
        except ValueError:
            return False
        return True

    count = 0
    for i in range(len(rows[0]) - 1):
        if any(i < len(row) and is_number(row[i]) for row in body):
            break
        count += 1
    return count


def split_table(lines: Sequence[str], width: int = TERMINAL_WIDTH) -> list[str]:
    """A pipe table wider than `width` as several tables, each with the leading label columns
    (task, level) and as many of the others as fit, a metric's "95% CI" column kept beside it; a
    table that fits is returned as it is."""
    if max(len(line) for line in lines) <= width:
        return list(lines)
    rows = [_cells(line) for line in lines]
    n = len(rows[0])
    widths = [max(len(row[i]) if i < len(row) else 0 for row in rows) for i in range(n)]
    keep = min(_label_columns(rows), n - 1)
    rule = next((row for row in rows if _is_rule(row)), [])
    right = [i < len(rule) and rule[i].endswith(":") for i in range(n)]  # numbers stay right-aligned
    units: list[list[int]] = []  # a metric and its interval column travel together
    for i in range(keep, n):
        if units and rows[0][i].endswith("95% CI"):
            units[-1].append(i)
        else:
            units.append([i])
    base = sum(widths[i] + 3 for i in range(keep)) + 1
    blocks: list[list[int]] = []
    current: list[int] = []
    used = base
    for unit in units:
        size = sum(widths[i] + 3 for i in unit)
        if current and used + size > width:
            blocks.append(current)
            current, used = [], base
        current += unit
        used += size
    blocks.append(current)
    out: list[str] = []
    for block in blocks:
        columns = [*range(keep), *block]
        for row in rows:
            if _is_rule(row):  # the rule under the header
                cells = ["-" * (widths[i] - 1) + (":" if row[i].endswith(":") else "-") for i in columns]
            else:
                text = [row[i] if i < len(row) else "" for i in columns]
                cells = [c.rjust(widths[i]) if right[i] else c.ljust(widths[i]) for c, i in zip(text, columns)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out[:-1]


def _wrap(line: str, width: int) -> list[str]:
    """A prose line at `width`, a quote's "> " and a bullet's indent kept on every line."""
    if len(line) <= width or not line.strip():
        return [line]
    lead = "> " if line.startswith("> ") else ""
    indent = "  " if line.lstrip(lead).startswith("- ") else ""
    return textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + indent, break_on_hyphens=False) or [
        line
    ]


def fit_tables(text: str, width: int = TERMINAL_WIDTH) -> str:
    """`text` (Markdown) for a console `width` columns wide: every pipe table wider than that
    split into column blocks that repeat the row labels, and prose lines wrapped."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out += split_table(lines[i:j], width)
            i = j
        else:
            out += _wrap(lines[i], width)
            i += 1
    return "\n".join(out)
