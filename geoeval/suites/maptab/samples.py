"""The Inspect samples of MapTab's questions: an RP query (`rp_sample`) or a QA question
(`qa_sample`) as system prompt, user prompt with its tables, and the map image when its setting
shows one, with the dimensions every score is split by and the metadata the scorers read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText

from geoeval.api import Dimensions, GeoevalError
from geoeval.suites.maptab.config import SETTING_OF, MapTabSuiteConfig, capabilities_of
from geoeval.suites.maptab.submit import QA_TOOL_LINE, RP_TOOL_LINE
from geoeval.suites.maptab.tokens import estimate_tokens

if TYPE_CHECKING:
    from geoeval.suites.maptab.routing.cost import Objective


def rp_sample(
    q: Any,
    tables: dict[str, str],
    image_uri: str | None,
    suite_cfg: MapTabSuiteConfig,
    *,
    objective: Objective | None = None,
    stations: Sequence[str] = (),
) -> Sample:
    """The Inspect sample of one RP query (`rp.queries.RPQuery`): system prompt (stating `objective`,
    the cost model the references are optimal under; default the scenario's,
    `routing.cost.SCENARIO_OBJECTIVE`), user prompt with `tables` ({title: text},
    already masked to the category's columns), and the map image when the setting shows one.
    A query whose instruction style is unknown (`style` < 0: the authors' own wording) is tagged
    style "unknown". `stations`: the names of the map's stations, by which the robust answer
    protocol tells a station from a similar-named one (`reading/match.py`)."""
    from geoeval.suites.maptab.routing.cost import objective_for
    from geoeval.suites.maptab.rp.prompts import TEXT_ROUTE_LINE, system_prompt, user_prompt

    objective = objective or objective_for(q.scenario)
    setting = SETTING_OF[q.category]
    system = system_prompt(q.category, q.scenario, q.weights, objective)
    user = user_prompt(q, tables, suite_cfg.table_format)
    if suite_cfg.answer_channel == "tool":  # the prompt asks for what the channel takes
        user = user.replace(TEXT_ROUTE_LINE, RP_TOOL_LINE)
    content: list[Any] = [ContentText(text=user)]
    if setting.startswith("map"):
        if image_uri is None:
            raise GeoevalError(f"sample {q.id}: setting {setting!r} shows a map but no map image was given")
        content.append(ContentImage(image=image_uri))
    dims = Dimensions(
        suite="maptab",
        task_family="rp",
        task=q.category,
        level=q.map_difficulty.lower(),
        setting=setting,
        capabilities=capabilities_of(q.category),
        extra={
            "query_level": q.query_difficulty.lower(),
            "resolution": f"{suite_cfg.resolution:g}",
            "scenario": q.scenario,
            "map": q.map_name,
            "table_format": suite_cfg.table_format,
            "language": suite_cfg.language,
            "style": str(q.style) if q.style >= 0 else "unknown",
        },
    )
    return Sample(
        id=q.id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=content)],
        target=list(q.routes),
        metadata={
            "suite": "maptab",
            "scenario": q.scenario,
            "category": q.category,
            "setting": setting,
            "map": q.map_name,
            "shard_key": q.map_name,
            "source": q.source,
            "destination": q.target,
            "weights": list(q.weights) if q.weights else None,
            "routes": list(q.routes),
            "stations": sorted(stations),
            "totals": q.totals,
            "map_difficulty": q.map_difficulty,
            "query_difficulty": q.query_difficulty,
            "task_family": "rp",
            **_token_counts(system, user, tables),
            "dims": dims.model_dump(mode="json"),
        },
    )


def _token_counts(system: str, user: str, tables: dict[str, str]) -> dict[str, int]:
    """The prompt's estimated token count (text only; an image is not counted) and that of its
    tables alone (appendix G.3's Table 9), with `tokens.estimate_tokens`."""

    return {
        "prompt_tokens": estimate_tokens(system) + estimate_tokens(user),
        "table_tokens": sum(estimate_tokens(text) for text in tables.values()),
    }


def qa_sample(q: Any, tables: dict[str, str], image_uri: str | None, suite_cfg: MapTabSuiteConfig) -> Sample:
    """The Inspect sample of one QA question (`qa.questions.QAQuery`): the type's system prompt, the question
    with the type's tables, and the map image when its setting shows one. The target is the answer
    text; metadata carries its kind and exact value for `acc`."""
    from geoeval.suites.maptab.qa import questions as qa

    system = qa.system_prompt(q.scenario, q.qa_type)
    user = qa.user_prompt(q, tables, suite_cfg.table_format)
    if suite_cfg.answer_channel == "tool":
        user = user.replace(qa.text_answer_line(), QA_TOOL_LINE)
    content: list[Any] = [ContentText(text=user)]
    if q.setting.startswith("map"):
        if image_uri is None:
            raise GeoevalError(f"sample {q.id}: setting {q.setting!r} shows a map but no map image was given")
        content.append(ContentImage(image=image_uri))
    dims = Dimensions(
        suite="maptab",
        task_family="qa",
        task=q.qa_type,
        level=q.map_difficulty.lower(),
        setting=q.setting,
        capabilities=qa.capabilities_of(q.scenario, q.qa_type),
        extra={
            "scenario": q.scenario,
            "map": q.map_name,
            "qa_category": q.qa_type.split("-")[1],
            "resolution": f"{suite_cfg.resolution:g}",
            "table_format": suite_cfg.table_format,
            "language": suite_cfg.language,
            "style": str(q.style),
        },
    )
    return Sample(
        id=q.id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=content)],
        target=[q.answer],
        metadata={
            "suite": "maptab",
            "task_family": "qa",
            "scenario": q.scenario,
            "qa_type": q.qa_type,
            "setting": q.setting,
            "map": q.map_name,
            "shard_key": q.map_name,
            "params": q.params,
            "answer": q.answer,
            "answer_kind": q.kind,
            "answer_value": q.value,
            "hidden_rows": list(q.hidden_rows),
            "map_difficulty": q.map_difficulty,
            **_token_counts(system, user, tables),
            "dims": dims.model_dump(mode="json"),
        },
    )
