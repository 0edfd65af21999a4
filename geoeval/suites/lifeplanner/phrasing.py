"""Optional LLM phrasing of case queries (LifePlanner section 3.2: queries are written from the
derived answer; geoeval's templates with personas are the offline default).

When `suite.phrasing_model` names an Inspect model, each templated query is rewritten by that
model at temperature 0. A rewrite must keep every protected token of the template (numbers and
times, and capitalised names after the first word: places, streets, weekdays); otherwise the
template is kept, because a rewrite that drops a constraint would change the case's unique answer.
Rewrites are cached beside the cases, keyed by the model and the template text.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from geoeval.api import GeoevalError, clean_text

PHRASING_PROMPT = """Rewrite the user's request below so that it sounds like a real person asking a
local-life assistant, in one short paragraph. Keep every place name, street name, day, time,
number and constraint exactly as written; add no new facts; do not answer it.
Output only the rewritten request.

Request:
{question}"""

_NUMBER = re.compile(r"\d+(?:[:.]\d+)?")
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*")


def protected_tokens(question: str) -> set[str]:
    """Numbers/times and capitalised names (not the sentence's first word) a rewrite must keep."""
    return set(_NUMBER.findall(question)) | {m.group(0) for m in _NAME.finditer(question.strip())}


def accept_rewrite(template: str, rewrite: str) -> bool:
    rewrite = (rewrite or "").strip()
    return bool(rewrite) and all(tok in rewrite for tok in protected_tokens(template))


async def _rewrite_all(questions: list[str], model: Any) -> list[str]:
    out = []
    for q in questions:
        reply = await model.generate(PHRASING_PROMPT.format(question=q))
        # the rewrite becomes the case's question (sent to the evaluated model, cached as JSON)
        text = clean_text(reply.completion or "").strip()
        out.append(text if accept_rewrite(q, text) else q)
    return out


def _run(coro: Any) -> Any:
    """Run a coroutine from sync code, also when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # raised again in the calling thread, not printed by this one
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def rephrase_questions(questions: list[str], model: Any, cache: Path | None = None) -> list[str]:
    """Rewrite each question with `model` (an Inspect model string or Model); templates are kept
    where a rewrite loses a protected token. Deterministic with a temperature-0 model; cached."""
    from inspect_ai.model import GenerateConfig, Model, get_model

    from geoeval.api import RETRY_DEFAULTS

    if not isinstance(model, Model):
        # bounded retries, as for every model geoeval builds: a dead endpoint fails, never hangs
        model = get_model(str(model), config=GenerateConfig(temperature=0, **RETRY_DEFAULTS))
    key = hashlib.sha256(json.dumps([str(model), questions]).encode()).hexdigest()[:16]
    path = cache / f"phrased-{key}.json" if cache is not None else None
    if path is not None and path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    try:
        rewritten = _run(_rewrite_all(list(questions), model))
    except Exception as exc:  # the provider failed after its retries: no case set, and nothing cached
        raise GeoevalError(
            f"suite.phrasing_model {model}: rephrasing the case queries failed: "
            f"{type(exc).__name__}: {clean_text(str(exc), max_chars=300)}"
        ) from exc
    if path is not None:
        path.write_text(json.dumps(rewritten, ensure_ascii=False), encoding="utf-8")
    return rewritten
