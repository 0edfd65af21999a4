"""MapTab metrics registered with the core: RP's `ema`, `pma` (means) and `ds` (a total: summed,
not averaged) of appendix C.1, and QA's `acc`, each under the run's answer protocol
(`MetricInput.protocol`): `paper` reads the answer as the authors' evaluator does (`metrics.py`,
`qa.questions`), `robust` reads what it says (`reading/`; README "Answer protocol").

`score_text` scores one answer exactly as the Inspect scorer does, under both protocols; the
public entry point (`MapTabSuite.score_answers`) and the meta-evaluation go through it."""

from __future__ import annotations

from typing import Any

from geoeval.api import MetricInput, register_metric, score_both_protocols
from geoeval.suites.maptab import metrics as m
from geoeval.suites.maptab.reading import match
from geoeval.suites.maptab.reading.route import answer_text, read_route
from geoeval.suites.maptab.submit import SUBMIT_ROUTE, SUBMIT_VALUE, route_answer, value_answer

NO_ROUTE = "no route in the answer (expected 'A-B(transfer)-C')"


def extract_answer(raw: str, protocol: str = "robust") -> tuple[str, str]:
    """The route a model's answer gives; a problem note when there is none. `paper`: the route
    line (`metrics.extract_route`); `robust`: the candidate routes of the one-answer rule, one a
    line (`reading.route`)."""
    route = m.extract_route(raw) if protocol == "paper" else answer_text(read_route(raw))
    return (route, "") if route else ("", NO_ROUTE)


def extract_qa_answer(raw: str, protocol: str = "robust") -> tuple[str, str]:
    """The text between `<answer_begin>` and `<answer_end>` (appendix B.3; `paper`: the last span,
    `robust`: every span, one a line; `acc` reads the values); a problem note when the tags are
    missing (the sample then scores 0 with that reason)."""
    from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END
    from geoeval.suites.maptab.qa.questions import extract_answer as extract

    if protocol == "paper":
        return extract(raw)
    spans = [s.strip() for s in m.tagged_texts(raw or "", ANSWER_BEGIN, ANSWER_END)]
    return ("\n".join(spans), "") if spans else ("", f"no {ANSWER_BEGIN}...{ANSWER_END} in the answer")


def extractor(metadata: dict[str, Any]):
    """The answer extractor of a sample's task family."""
    return extract_qa_answer if metadata.get("task_family") == "qa" else extract_answer


def score_text(
    raw: str, target: list[str], metadata: dict[str, Any], metric_names: list[str], protocol: str
) -> tuple[str, str, dict[str, float], list[str], dict[str, dict[str, float]]]:
    """A completion scored as the Inspect scorer (`core.scoring.geoeval_scorer`) scores it, under
    `protocol` and the other one: (answer as read, problem, values, failures, disagreement)."""
    return score_both_protocols(
        list(metric_names), extractor(metadata), raw or "", list(target), dict(metadata), {}, protocol
    )


def reading(raw: str, metadata: dict[str, Any], protocol: str) -> dict[str, Any]:
    """What the protocol read in an answer and which rules fired (`AnswerScore.reading`)."""
    qa = metadata.get("task_family") == "qa"
    if protocol == "paper":
        answer, problem = extractor(metadata)(raw or "", protocol="paper")
        rules = ["last tagged span" if qa else "route line (metrics.extract_route)", "difflib >= 0.5 names"]
        return {"protocol": "paper", "extracted": answer, "problem": problem, "rules": rules[:1] if qa else rules}
    if qa:
        from geoeval.suites.maptab.reading.qa import read_qa

        return {"protocol": "robust", **read_qa(raw, str(metadata.get("answer_kind"))).as_dict()}
    stations = match.stations_of(metadata, list(metadata.get("routes") or []))
    return {"protocol": "robust", **read_route(raw, stations).as_dict()}


def _scenario(inp: MetricInput) -> str:
    return inp.metadata.get("scenario", "metromap")


def _ema(inp: MetricInput) -> float:
    if inp.protocol == "paper":
        return m.ema(inp.answer, inp.target, _scenario(inp))
    return match.ema(inp.raw, inp.target, inp.metadata)


@register_metric("ema", suites=["maptab"], description="Exact Match Accuracy (appendix C.1)")
def ema_metric(inp: MetricInput) -> float:
    return _ema(inp)


@register_metric("pma", suites=["maptab"], description="Partial Match Accuracy (appendix C.1)")
def pma_metric(inp: MetricInput) -> float:
    if inp.protocol == "paper":
        return m.pma(inp.answer, inp.target, _scenario(inp))
    return match.pma(inp.raw, inp.target, inp.metadata)


@register_metric("ds", suites=["maptab"], description="Difficulty-aware Score (appendix C.1); summed over samples")
def ds_metric(inp: MetricInput) -> float:
    return m.ds(_ema(inp), inp.metadata.get("map_difficulty", "Easy"), inp.metadata.get("query_difficulty", "Easy"))


@register_metric("acc", suites=["maptab"], description="QA accuracy (appendix B.3): 1 when the tagged answer is right")
def acc_metric(inp: MetricInput) -> float:
    from geoeval.suites.maptab.qa.questions import is_correct

    kind = inp.metadata.get("answer_kind")
    if kind is None:
        raise ValueError("acc scores QA samples (suite.task_family=qa); this sample has no QA answer")
    if inp.protocol == "paper":
        values = [inp.answer]
    else:
        from geoeval.suites.maptab.reading.qa import read_qa

        # the one-answer rule: every value the answer states must be right
        values = read_qa(inp.raw, kind).values or [""]
    try:
        return float(all(is_correct(v, inp.target[0], kind, inp.metadata.get("answer_value")) for v in values))
    except ValueError:
        # a malformed answer (a name where 1/0 or a number is asked) is wrong, not a harness
        # failure: it scores 0 like a missing tag (the README's rule)
        return 0.0


@register_metric(
    "prompt_tokens",
    suites=["maptab"],
    description="estimated prompt tokens, text only (tokens.estimate_tokens; appendix G.3)",
)
def prompt_tokens_metric(inp: MetricInput) -> float:
    return float(inp.metadata["prompt_tokens"])


@register_metric(
    "table_tokens",
    suites=["maptab"],
    description="estimated tokens of the tables in the prompt (tokens.estimate_tokens; Table 9)",
)
def table_tokens_metric(inp: MetricInput) -> float:
    return float(inp.metadata["table_tokens"])


# ------------------------------------------------------------ the public scoring entry point


def final_answer(answer: str, messages: list[dict[str, Any]] | None) -> str:
    """The completion a run would score: `answer` when given; else, from a trajectory of Inspect
    chat messages (validated as `inspect_ai.model.ChatMessage`), the `answer` argument of the last
    `submit` call of the react agent, the last typed submission (`submit_route`, `submit_answer`:
    its answer as the tool returns it), or the last assistant message's text."""
    if answer or not messages:
        return answer or ""
    from inspect_ai.model import ChatMessage, ChatMessageAssistant
    from pydantic import TypeAdapter, ValidationError

    try:
        parsed = [TypeAdapter(ChatMessage).validate_python(msg) for msg in messages]
    except ValidationError as exc:
        from geoeval.api import GeoevalError

        raise GeoevalError(f"messages: not Inspect chat messages ({exc.errors()[0]['msg']})") from None
    for msg in reversed(parsed):
        if isinstance(msg, ChatMessageAssistant):
            for call in reversed(msg.tool_calls or []):
                if call.function == "submit":
                    return str(call.arguments.get("answer", ""))
                if call.function == SUBMIT_ROUTE:  # the typed channel (submit.py)
                    return route_answer(list(call.arguments.get("route") or []), call.arguments.get("transfer_at"))
                if call.function == SUBMIT_VALUE:
                    return value_answer(call.arguments.get("value", ""))
            if msg.text:
                return msg.text
    return ""


def score_answers(spec: Any, samples: Any, answers: list[Any], metric_names: list[str] | None = None) -> list[Any]:
    """`MapTabSuite.score_answers`: each answer scored by `score_text` under the run's protocol,
    with its reading (`reading`); `metric_names` (default: the run's `metrics.metrics`)."""
    from geoeval.api import AnswerScore, GeoevalError

    names = list(spec.metrics.metrics) if metric_names is None else list(metric_names)
    protocol = spec.scoring.protocol
    out = []
    for item in answers:
        sample = samples[item.sample_id]
        metadata = dict(sample.metadata or {})
        raw = final_answer(item.answer, item.messages)
        answer, problem, values, failures, disagreement = score_text(
            raw, list(sample.target), metadata, names, protocol
        )
        if failures:
            raise GeoevalError(f"sample {item.sample_id}: {'; '.join(failures)}")
        out.append(
            AnswerScore(
                sample_id=item.sample_id,
                scores={k: float(v) for k, v in values.items()},
                answer=answer,
                reading=reading(raw, metadata, protocol),
                explanation=problem,
                protocol_disagreement=disagreement,
                epoch=item.epoch,
            )
        )
    return out
