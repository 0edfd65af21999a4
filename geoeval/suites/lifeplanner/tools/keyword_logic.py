"""search_notes' keyword logic: parsed into an AST (`parse_keyword_logic`), compiled to
parameterised SQL (`keyword_sql`) or matched against text (`keyword_matches`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# --------------------------------------------------------------------------------------------
# search_notes: keyword logic parsed into an AST, compiled to parameterised SQL
# --------------------------------------------------------------------------------------------


class KeywordSyntaxError(ValueError):
    """A keyword expression that cannot be parsed."""


@dataclass(frozen=True)
class Term:
    text: str  # lower-cased phrase, matched as a substring


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class And:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Any, ...]


_OPERATORS = ("AND", "OR", "NOT")
_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|"([^"]*)"|([^\s()"]+))')
MAX_KEYWORD_LEN = 300
MAX_TERMS = 12
MAX_DEPTH = 8


def _tokenize(s: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN_RE.match(s, pos)
        if not m or m.end() == pos:
            if s[pos:].lstrip().startswith('"'):
                raise KeywordSyntaxError("unbalanced double quote")
            raise KeywordSyntaxError(f"cannot read '{s[pos : pos + 20]}'")
        if m.group(1):
            tokens.append(("(", "("))
        elif m.group(2):
            tokens.append((")", ")"))
        elif m.group(3) is not None:
            tokens.append(("word", m.group(3)))
        else:
            w = m.group(4)
            tokens.append(("op", w) if w in _OPERATORS else ("word", w))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.i, self.depth, self.terms = tokens, 0, 0, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def is_op(self, op: str) -> bool:
        t = self.peek()
        return t is not None and t == ("op", op)

    def parse(self) -> Any:
        if not self.tokens:
            raise KeywordSyntaxError("empty keyword")
        node = self.parse_or()
        extra = self.peek()
        if extra is not None:
            raise KeywordSyntaxError(f"unexpected '{extra[1]}'")
        return node

    def parse_or(self) -> Any:
        items = [self.parse_and()]
        while self.is_op("OR"):
            self.i += 1
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def parse_and(self) -> Any:
        items = [self.parse_unary()]
        while True:
            if self.is_op("AND"):
                self.i += 1
                items.append(self.parse_unary())
            elif self.is_op("NOT"):  # "a NOT b" reads as "a AND NOT b"
                self.i += 1
                items.append(Not(self.parse_unary()))
            else:
                break
        return items[0] if len(items) == 1 else And(tuple(items))

    def parse_unary(self) -> Any:
        if self.is_op("NOT"):
            self.i += 1
            return Not(self.parse_unary())
        return self.parse_primary()

    def parse_primary(self) -> Any:
        t = self.peek()
        if t is None:
            raise KeywordSyntaxError("a keyword is missing after an operator")
        if t[0] == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise KeywordSyntaxError(f"parentheses nested deeper than {MAX_DEPTH}")
            self.i += 1
            node = self.parse_or()
            if self.peek() != (")", ")"):
                raise KeywordSyntaxError("missing ')'")
            self.i += 1
            self.depth -= 1
            return node
        if t[0] != "word":
            raise KeywordSyntaxError(f"unexpected '{t[1]}'")
        words = []
        while (nxt := self.peek()) is not None and nxt[0] == "word":  # adjacent words form one phrase
            words.append(nxt[1])
            self.i += 1
        phrase = " ".join(" ".join(words).lower().split())
        if not phrase:
            raise KeywordSyntaxError("empty phrase")
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise KeywordSyntaxError(f"more than {MAX_TERMS} keywords")
        return Term(phrase)


def parse_keyword_logic(keyword: str) -> Any:
    """Parse `coffee AND (quiet OR "reading sofa") NOT crowded` into an AST of Term/And/Or/Not.

    Operators are the upper-case words AND, OR, NOT (lower-case words are ordinary words); NOT may
    be unary or binary ("a NOT b" = a AND NOT b); adjacent words without an operator form one
    phrase; double quotes keep operators inside a phrase. Terms match case-insensitively as
    substrings of a note's title, description and tags."""
    if len(keyword) > MAX_KEYWORD_LEN:
        raise KeywordSyntaxError(f"keyword longer than {MAX_KEYWORD_LEN} characters")
    return _Parser(_tokenize(keyword)).parse()


def keyword_sql(node: Any, column: str = "search_text") -> tuple[str, list[str]]:
    """SQL predicate and parameters for an AST. `column` must be a trusted identifier; only
    constant fragments and `?` placeholders enter the SQL text."""
    if not re.fullmatch(r"[a-z_]+", column):
        raise ValueError("column must be a plain identifier")
    if isinstance(node, Term):
        return f"contains({column}, ?)", [node.text]
    if isinstance(node, Not):
        sql, params = keyword_sql(node.operand, column)
        return f"(NOT {sql})", params
    if isinstance(node, (And, Or)):
        parts = [keyword_sql(x, column) for x in node.items]
        joiner = " AND " if isinstance(node, And) else " OR "
        return "(" + joiner.join(p[0] for p in parts) + ")", [v for p in parts for v in p[1]]
    raise TypeError(f"not a keyword AST node: {node!r}")


def keyword_matches(node: Any, text: str) -> bool:
    """The same predicate evaluated in Python (the reference the SQL is tested against)."""
    text = text.lower()
    if isinstance(node, Term):
        return node.text in text
    if isinstance(node, Not):
        return not keyword_matches(node.operand, text)
    if isinstance(node, And):
        return all(keyword_matches(x, text) for x in node.items)
    if isinstance(node, Or):
        return any(keyword_matches(x, text) for x in node.items)
    raise TypeError(f"not a keyword AST node: {node!r}")
