"""Secrets in configs: recognise them, redact them for storage, strip them from the run identity,
and scrub them out of free text and saved files.

How to pass a key
-----------------
Put provider keys in environment variables; Inspect reads them itself, so they never enter the
config: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `<SERVICE>_API_KEY` for `openai-api/<service>/...`
(e.g. `LOCAL_API_KEY` for `openai-api/local/my-model`), `VLLM_API_KEY`, `OLLAMA_API_KEY`. A key
given in the config (`+model.args.api_key=...`) is accepted and used, but it is redacted
everywhere geoeval writes the config (MLflow params and artifacts, the warehouse, Inspect logs,
console output, Hydra's saved config), and it is left out of the run identity, so rotating a key
never makes a run look like a different experiment.

What counts as a secret
-----------------------
A value is secret when its key says so (`is_secret_key`), when it is a credential inside a URL
(`https://user:pass@host`, `?api_key=...`), or when it has the shape of a well-known provider key
(`sk-...`, `hf_...`, `ghp_...`, `AKIA...`), whatever its key is called. Key names are split into
words (`OPENAI_API_KEY`, `openaiApiKey` and `x-api-key` all give `api`, `key`, ...) and matched by
these rules:

- `password`, `passwd`, `passphrase`, `secret` (anywhere: `client_secret`, `secrets`);
- a word `auth`, `authorization`, `credential(s)`, `creds` or `cookie(s)` that ends the key or is
  followed by `header(s)`/`value`/`string` (`basic_auth`, `Authorization`, `auth_header`), but not
  one followed by another word, which names a setting about it (`RAY_AUTH_MODE`,
  `authorization_url`, `credentials_file`); `authors` is not `auth`;
- a last word `key`/`keys` (`api_key`, `openai_key`, `private_key`, `api_keys`), or a glued
  `apikey`, unless the word before it names a data key. `*_key` is secret by default because a
  missed secret leaks while a wrongly masked value only hides a harmless string; the data-key
  qualifiers geoeval, Inspect and common libraries use are listed in `NON_SECRET_KEY_QUALIFIERS`
  (`sort_key`, `shard_key`, `primary_key`, `style_key`, `cache_key`, `attribute_key`, `osm_key`,
  `public_key`, ...). Add a name there when a new data key appears in the config; a bare `key`
  (an OSM tag, a sort key) is not a secret;
- a word `token` or ending in `token` (`token`, `hf_token`, `access_token`, `accessToken`),
  unless a neighbouring word makes it a count (`max_token`, `token_limit`, `token_count`,
  `token_usage`). Plural `tokens` and `tokenizer` are never secret: they are the generate
  settings and usage metrics (`max_tokens`, `reasoning_tokens`, `input_tokens`, `tokens`).

The structures handled are plain nested dicts, lists and tuples (convert an OmegaConf config with
`OmegaConf.to_container(cfg, resolve=True)` and a pydantic model with `model_dump()` first).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

#: What every secret value becomes.
REDACTED = "***"

#: Secrets shorter than this are not scrubbed from free text: they would match everywhere.
MIN_SECRET_CHARS = 4

#: Placeholder keys that servers accept and Inspect uses as defaults (vLLM's `inspectai`,
#: Ollama's `ollama`, vLLM's documented `EMPTY`). They guard nothing, and scrubbing them from free
#: text would mangle model names such as `ollama/llama3.2`.
PLACEHOLDER_VALUES = frozenset(
    {
        "inspectai",
        "ollama",
        "empty",
        "none",
        "null",
        "dummy",
        "placeholder",
        "changeme",
        "not-needed",
        "no-key",
        REDACTED,
    }
)

#: Words before `key`/`keys` that name a data key, not a credential.
NON_SECRET_KEY_QUALIFIERS = frozenset(
    {
        # geoeval's own names (suites, warehouse, reports)
        "attribute",
        "x",
        "y",
        "env",
        "metric",
        "map",
        "best",
        "src",
        "dst",
        "cand",
        "shard",
        "sort",
        "argument",
        "station",
        "osm",
        "line",
        "group",
        "by",
        "extra",
        "item",
        "finished",
        "style",
        # database, cache and dict keys (Inspect's and OpenAI's `prompt_cache_key` among them)
        "primary",
        "foreign",
        "unique",
        "composite",
        "partition",
        "cluster",
        "hash",
        "join",
        "lookup",
        "dict",
        "cache",
        "index",
        "row",
        "column",
        "field",
        "record",
        "sample",
        "seed",
        "order",
        "idempotency",
        "dedup",
        "public",
        "name",
        "id",
        "task",
        "result",
        "score",
        "ref",
        "tag",
        "label",
    }
)

# words before (`max_token`) or after (`token_limit`) `token` that make it a count or a limit
_TOKEN_COUNT_BEFORE = frozenset(
    {
        "max",
        "min",
        "num",
        "n",
        "count",
        "total",
        "input",
        "output",
        "prompt",
        "completion",
        "reasoning",
        "cached",
        "per",
        "estimate",
    }
)
_TOKEN_COUNT_AFTER = frozenset(
    {
        "limit",
        "limits",
        "count",
        "counts",
        "usage",
        "budget",
        "length",
        "len",
        "rate",
        "ratio",
        "metric",
        "metrics",
        "estimate",
        "id",
        "ids",
        "type",
    }
)
_SECRET_SUBSTRINGS = ("password", "passwd", "passphrase", "secret")
_SECRET_WORDS = frozenset({"auth", "authorization", "credential", "credentials", "creds", "cookie", "cookies"})
# what may follow such a word in a key that still holds the secret itself (`auth_header`); any
# other word names a setting about it (`RAY_AUTH_MODE`, `authorization_url`, `credentials_file`)
_SECRET_WORD_HOLDERS = frozenset({"header", "headers", "value", "string", "b64", "base64", "json"})
# query/fragment parameter names that carry credentials in URLs beyond `is_secret_key`: Google's
# `?key=`, Azure SAS `sig`, S3 presigned `X-Amz-Signature`
_SECRET_URL_PARAMS = frozenset({"key", "sig", "signature", "x_amz_signature"})

# camelCase boundaries, then any run of non-alphanumerics, split a key into words
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")

# well-known provider key formats (OpenAI/Anthropic `sk-`, Hugging Face, GitHub, AWS access key
# ids, Slack, Google API keys); the look-behind keeps `desk-...` or `task-...` from matching
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})"
)
# what a URL in free text is; `find_urls` finds its matches from each "://" (faster, same spans)
URL_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_BODY = re.compile(r"[^\s'\"<>`]+")


# --- key names --------------------------------------------------------------------------------
def key_words(key: str) -> list[str]:
    """`key` split into lower-case words: `OPENAI_API_KEY`, `openaiApiKey`, `openai-api-key` all
    give `["openai", "api", "key"]`."""
    return [w for w in _NON_WORD.split(_CAMEL.sub("_", key).lower()) if w]


def _is_secret_word(words: list[str], i: int) -> bool:
    if words[i] not in _SECRET_WORDS:
        return False
    return i == len(words) - 1 or words[i + 1] in _SECRET_WORD_HOLDERS


def _is_secret_key_word(words: list[str], i: int) -> bool:
    word = words[i]
    if word in ("key", "keys"):
        if i != len(words) - 1 or i == 0:
            return False  # `key` alone, or `api_key_var` (the name of a variable, not a key)
        return words[i - 1] not in NON_SECRET_KEY_QUALIFIERS
    return word.endswith(("apikey", "apikeys"))


def _is_secret_token_word(words: list[str], i: int) -> bool:
    word = words[i]
    if not word.endswith("token"):  # excludes `tokens`, `tokenizer`, `max_tokens`
        return False
    if word != "token" and word.removesuffix("token") in _TOKEN_COUNT_BEFORE:
        return False  # glued `maxtoken`
    if i > 0 and words[i - 1] in _TOKEN_COUNT_BEFORE:
        return False
    return not (i + 1 < len(words) and words[i + 1] in _TOKEN_COUNT_AFTER)


def is_secret_key(key: Any) -> bool:
    """True when a config key, header or environment variable named `key` holds a secret (the
    rules are in the module docstring). Non-string keys are never secret."""
    if not isinstance(key, str):
        return False
    words = key_words(key)
    joined = "".join(words)
    if any(s in joined for s in _SECRET_SUBSTRINGS):
        return True
    for i in range(len(words)):
        if _is_secret_word(words, i) or _is_secret_key_word(words, i) or _is_secret_token_word(words, i):
            return True
    return False


def _is_secret_url_param(name: str) -> bool:
    return is_secret_key(name) or "_".join(key_words(name)) in _SECRET_URL_PARAMS


# --- URLs and free text -----------------------------------------------------------------------
def _redact_params(params: str) -> str:
    """`a=1&api_key=s&token=t` -> `a=1&api_key=***&token=***` (the rest kept byte for byte)."""
    parts = re.split(r"([&;])", params)
    for i, part in enumerate(parts):
        name, eq, value = part.partition("=")
        if eq and value and _is_secret_url_param(name):
            parts[i] = f"{name}={REDACTED}"
    return "".join(parts)


def redact_url(url: str) -> str:
    """`url` with its credentials replaced by `***`: the whole user-info part
    (`https://user:pass@host` -> `https://***@host`; a lone user name is often a token itself)
    and the values of secret query and fragment parameters (`?api_key=...&token=...`,
    `?key=...`, `?sig=...`). Anything that is not such a URL comes back unchanged."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)", url, re.DOTALL)
    if not match:
        return url
    scheme, netloc, rest = match.groups()
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    path, hash_, fragment = rest.partition("#")
    path, question, query = path.partition("?")
    if query:
        query = _redact_params(query)
    if fragment:
        fragment = _redact_params(fragment)
    return f"{scheme}{netloc}{path}{question}{query}{hash_}{fragment}"


def find_urls(text: str) -> list[tuple[int, int]]:
    """(start, end) of every URL in `text`: the matches of `URL_PATTERN`, left to right, found
    from the "://" each must contain. The pattern itself tries every letter and its greedy scheme
    run, ~80 ns a character on the base64 images of an Inspect log (0.1 s a MapTab log, scrubbed
    after every job). A scheme run ends at the ":" (no scheme character), so a match whose
    scheme ends at a given "://" starts at the first letter of the scheme run before it, or
    there is none; the runs before two "://" are disjoint, and a body may swallow the next "://"."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (colon := text.find("://", pos)) >= 0:
        run = colon
        while run > pos and text[run - 1] in _SCHEME_CHARS:
            run -= 1
        start = next((i for i in range(run, colon) if text[i].isascii() and text[i].isalpha()), None)
        body = _URL_BODY.match(text, colon + 3)
        if start is None or body is None:  # no letter to start the scheme, or nothing after "://"
            pos = colon + 1
            continue
        spans.append((start, body.end()))
        pos = body.end()
    return spans


def redact_urls(text: str) -> str:
    """`redact_url` applied to every URL inside free text."""
    spans = find_urls(text) if "://" in text else []
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += (text[last:start], redact_url(text[start:end]))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def redact_key_shapes(text: str) -> str:
    """Every substring of `text` shaped like a well-known provider key replaced by `***`."""
    return _KEY_SHAPES.sub(REDACTED, text)


def redact_string(text: str) -> str:
    return redact_key_shapes(redact_urls(text))


# --- nested configs ---------------------------------------------------------------------------
def _is_blank(value: Any) -> bool:
    return value is None or value == ""


def redact(obj: Any) -> Any:
    """A copy of nested dicts/lists/tuples with the value of every secret key replaced by `***`
    (None and "" stay, so an unset key still shows as unset), URL credentials and key-shaped
    substrings redacted in every other string. For what is stored or shown."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if is_secret_key(k) and not _is_blank(v) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v) for v in obj)
    if isinstance(obj, str):
        return redact_string(obj)
    return obj


def strip_secrets(obj: Any) -> Any:
    """A copy of nested dicts/lists/tuples without any secret key (dropped whatever its value,
    so `api_key: null` and no `api_key` are the same), with URL credentials and key-shaped
    substrings redacted in the other strings. For the run identity: a rotated key, or the same
    endpoint with another password, gives the same hash."""
    if isinstance(obj, Mapping):
        return {k: strip_secrets(v) for k, v in obj.items() if not is_secret_key(k)}
    if isinstance(obj, (list, tuple)):
        return type(obj)(strip_secrets(v) for v in obj)
    if isinstance(obj, str):
        return redact_string(obj)
    return obj


def _leaf_strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _leaf_strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _leaf_strings(v)


def _url_secrets(text: str) -> Iterable[str]:
    """The credential parts of every URL in `text`: user name, password, secret parameter values."""
    for start, end in find_urls(text):
        url = text[start:end]
        found = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", url)
        if found is None:  # never: `find_urls` finds only `scheme://...`
            continue
        netloc = found.group(1)
        if "@" in netloc:
            # `user:password@`: the password; `token@` (no colon): the user part is the token
            user, colon, password = netloc.rpartition("@")[0].partition(":")
            yield password if colon else user
        for name, value in re.findall(r"[?#&;]([^=&;#]+)=([^&;#]*)", url):
            if _is_secret_url_param(name):
                yield value


def worth_scrubbing(value: str) -> bool:
    return len(value) >= MIN_SECRET_CHARS and value.lower() not in PLACEHOLDER_VALUES


def collect_secret_values(obj: Any) -> set[str]:
    """The secret strings in nested dicts/lists: every string under a secret key (at any depth
    below it), URL credentials and key-shaped substrings anywhere. Only strings of at least
    `MIN_SECRET_CHARS` characters that are not known placeholders (`PLACEHOLDER_VALUES`) are
    kept: these are what `scrub_text` looks for. Numbers under secret keys are redacted by
    `redact` but not collected (scrubbing `1234` from a log would hit every such number)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if is_secret_key(k):
                    found.update(_leaf_strings(v))
                else:
                    walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            found.update(_url_secrets(node))
            found.update(_KEY_SHAPES.findall(node))

    walk(obj)
    return {s for s in found if worth_scrubbing(s)}


def env_secret_values(environ: Mapping[str, str] | None = None) -> set[str]:
    """The values of the secret-named environment variables (`OPENAI_API_KEY`, `HF_TOKEN`, ...)
    of `environ` (default: this process's) and the credentials inside URL-valued ones, filtered
    like `collect_secret_values`. Scrubbing them too catches a key that reached text through
    `${oc.env:...}` or a provider's error message."""
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if is_secret_key(k) and isinstance(v, str)}
    for value in environ.values():  # e.g. PIP_INDEX_URL=https://user:password@host/simple
        if isinstance(value, str) and "://" in value:
            found.update(_url_secrets(value))
    return {v for v in found if worth_scrubbing(v)}


def secrets_in_plain_fields(obj: Any, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Where a known secret's value sits in a field whose name is not secret, as
    (dotted path, where the secret comes from): a provider key in the environment, or the value of
    a secret-named key of `obj`, copied (typically by `${oc.env:...}` or `${model.args.api_key}`)
    into, say, `experiment_name`. Redaction works by key name, so such a value would be written
    wherever that field is (the warehouse, MLflow's experiment and params, reports). A URL's own
    credentials are not counted: `redact_url` blanks them wherever the URL is written."""
    environ = os.environ if environ is None else environ
    sources = {v: f"the environment's {k}" for k, v in environ.items() if is_secret_key(k) and worth_scrubbing(v)}
    found: list[tuple[str, str]] = []

    def secret_keyed(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if is_secret_key(k):
                    for s in _leaf_strings(v):
                        if worth_scrubbing(s):
                            sources.setdefault(s, f"{path}{k}")
                else:
                    secret_keyed(v, f"{path}{k}.")
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                secret_keyed(v, f"{path}{i}.")

    def plain(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if not is_secret_key(k):
                    plain(v, f"{path}.{k}" if path else str(k))
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                plain(v, f"{path}[{i}]")
        elif isinstance(node, str):
            text = redact_string(node)  # URL credentials and key shapes are redacted where written
            for secret, source in sources.items():
                if secret in text:
                    found.append((path, source))
                    return

    secret_keyed(obj, "")
    plain(obj, "")
    return found


def _scrub_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    return _compiled_pattern(frozenset(s for s in secrets if isinstance(s, str)))


@functools.lru_cache(maxsize=32)
def _compiled_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    variants: set[str] = set()
    for secret in secrets:
        if isinstance(secret, str) and len(secret) >= MIN_SECRET_CHARS:
            variants.add(secret)
            variants.add(quote(secret, safe=""))  # as it appears inside a URL
    if not variants:
        return None
    # longest first, so that a secret containing another is replaced whole
    return re.compile("|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True)))


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret (and of its URL-encoded form) replaced by
    `***`, and URL credentials and key-shaped substrings redacted. For console output, Inspect
    logs and saved config files."""
    pattern = _scrub_pattern(secrets)
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return redact_string(text)
