"""geoeval's public API: what a suite or a plugin builds on, in one place.

Suites (`geoeval/suites/`) and plugins import from here, never from `geoeval.core.*`
(`tests/core/test_architecture.py` checks it). Every name in `__all__` keeps its meaning for a
release at least; a name that moves inside the core stays here, so a plugin written against this
module does not follow the core's reorganisations. Names removed or renamed here are first
deprecated for one release (docs/plugins.md, "The public API", has the promise and the changelog).

The names, by what a suite does with them:

- registration: `Suite` (and its contract `SuiteSpec`), `register_suite`, `register_metric`,
  `register_tool`, `get_suite`, `get_tool`, `suite_names`; a suite declares its own CLI commands
  and MCP servers as `Suite.commands` and `Suite.mcp_servers`;
- metric input: `MetricInput` (what a metric function receives), `MetricContext`, `MetricSpec`;
- answer scoring: `geoeval_scorer` (the Inspect scorer of every suite), `score_answers` (the
  public scoring entry point), `score_both_protocols`, `compute_metrics`, the metadata keys, and
  the records `SampleResult`, `Dimensions`, `AnswerToScore`, `AnswerScore`, `ScoredAnswer`,
  `Tier`, `MetaEvalAnswer`; the meta-evaluation's tiers and reading families;
- judges: `JudgeSpec`, `JudgeEnsemble`, `JudgeRequest`, `JudgeVerdict`, `JudgesFailed`;
- config: `Strict` (the base of every config schema), `RunSpec`, `validate_config`,
  `compose_suite_spec`; errors: `GeoevalError`;
- reading answers: the reading layer (`parse`, `assign_roles`, `decide`, the normalisers, the cue
  `lexicon`), and `submit_solver`;
- what suites share besides: text hygiene, caches, reports, data fetching, role models, stage
  timers, Inspect's running sample (`sample_state`).

Importing this module is cheap (pydantic and the core's plain modules). The names whose modules
import Inspect, pyarrow, matplotlib or DuckDB are loaded on first use by the module's
`__getattr__` (`_LAZY`), so `import geoeval.api` (a plugin's import, `geoeval --help`, a config
check) does not pay for them; the `TYPE_CHECKING` imports let mypy see their types.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from geoeval.core.analysis.aggregate import group_table
from geoeval.core.analysis.answer_families import AnswerPair, reading_family_answers, reading_family_targets
from geoeval.core.analysis.meta_eval import DEFECT, REFERENCE, WORTHLESS
from geoeval.core.cache.disk import DiskCache, code_version, content_key
from geoeval.core.cache.memo import CopyingMemo, LruMemo, file_digest, file_key
from geoeval.core.config.compose import compose_suite_spec
from geoeval.core.config.schema import JudgeSpec, RunSpec, Strict, SuiteConfig
from geoeval.core.config.validate import validate_config
from geoeval.core.data.fetch import resolve_root
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import mcp_tool_source_local, sample_model_usage, sample_state
from geoeval.core.reading import lexicon
from geoeval.core.reading.candidates import Candidate, Found, Retraction, Role, assign_roles
from geoeval.core.reading.document import Document, Segment, parse
from geoeval.core.reading.normalise import fold, nfkc, number_spans, plain
from geoeval.core.reading.number_words import EN_ONES, EN_TENS, ZH_DIGITS, ZH_SCALES
from geoeval.core.reading.rule import (
    ECHOED,
    REJECTED,
    REJECTED_ELSEWHERE,
    RETRACTED,
    SUPERSEDED,
    Decision,
    decide,
)
from geoeval.core.records import (
    AnswerScore,
    AnswerToScore,
    Dimensions,
    MetaEvalAnswer,
    SampleResult,
    ScoredAnswer,
    Tier,
)
from geoeval.core.registry import (
    EnvSchema,
    MetricContext,
    MetricFn,
    MetricSpec,
    Suite,
    SuiteSpec,
    ToolSpec,
    get_suite,
    get_tool,
    register_metric,
    register_suite,
    register_tool,
    suite_names,
)
from geoeval.core.run.preflight import RETRY_DEFAULTS
from geoeval.core.text import MAX_DEPTH, clean_text, clean_value, is_clean, nesting_depth
from geoeval.core.timing import stage
from geoeval.judges.ensemble import JudgeEnsemble, JudgeRequest, JudgesFailed, JudgeVerdict, majority_vote, vote_cache

if TYPE_CHECKING:
    from geoeval.core.analysis.job_reports import plots_wanted
    from geoeval.core.analysis.reports import markdown_table, save_figure
    from geoeval.core.reading.submit import submit_solver
    from geoeval.core.run.models import build_role_model
    from geoeval.core.scoring import (
        DETAILS_KEY,
        PROTOCOL_DISAGREEMENT_KEY,
        PROTOCOLS,
        SAMPLE_ERROR_KEY,
        MetricInput,
        compute_metrics,
        geoeval_scorer,
        protocol_disagreement,
        score_answers,
        score_both_protocols,
    )
    from geoeval.core.warehouse.store import Warehouse

#: name -> the module it is loaded from on first use, and why that module is not imported here
_LAZY: dict[str, str] = {
    # Inspect's scorer and solver machinery (~1 s): the scoring entry points and their keys
    **dict.fromkeys(
        (
            "MetricInput",
            "geoeval_scorer",
            "score_answers",
            "score_both_protocols",
            "compute_metrics",
            "protocol_disagreement",
            "PROTOCOLS",
            "SAMPLE_ERROR_KEY",
            "DETAILS_KEY",
            "PROTOCOL_DISAGREEMENT_KEY",
        ),
        "geoeval.core.scoring",
    ),
    "submit_solver": "geoeval.core.reading.submit",  # Inspect's tools
    "build_role_model": "geoeval.core.run.models",  # Inspect's models and providers
    "markdown_table": "geoeval.core.analysis.reports",  # pyarrow (and matplotlib when plotting)
    "save_figure": "geoeval.core.analysis.reports",
    "plots_wanted": "geoeval.core.analysis.job_reports",  # the reports, pricing and the registry's reports
    "Warehouse": "geoeval.core.warehouse.store",  # DuckDB
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'geoeval.api' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    # registration and the suite contract
    "EnvSchema",
    "MetricContext",
    "MetricFn",
    "MetricSpec",
    "Suite",
    "SuiteSpec",
    "ToolSpec",
    "get_suite",
    "get_tool",
    "register_metric",
    "register_suite",
    "register_tool",
    "suite_names",
    # metric input and answer scoring
    "DETAILS_KEY",
    "MetricInput",
    "PROTOCOLS",
    "PROTOCOL_DISAGREEMENT_KEY",
    "SAMPLE_ERROR_KEY",
    "compute_metrics",
    "geoeval_scorer",
    "protocol_disagreement",
    "score_answers",
    "score_both_protocols",
    # records
    "AnswerScore",
    "AnswerToScore",
    "Dimensions",
    "MetaEvalAnswer",
    "SampleResult",
    "ScoredAnswer",
    "Tier",
    # meta-evaluation
    "DEFECT",
    "REFERENCE",
    "WORTHLESS",
    "AnswerPair",
    "reading_family_answers",
    "reading_family_targets",
    # judges
    "JudgeEnsemble",
    "JudgeRequest",
    "JudgeSpec",
    "JudgeVerdict",
    "JudgesFailed",
    "majority_vote",
    "vote_cache",
    # config and errors
    "GeoevalError",
    "RunSpec",
    "Strict",
    "SuiteConfig",
    "compose_suite_spec",
    "validate_config",
    # the reading layer
    "Candidate",
    "Decision",
    "Document",
    "ECHOED",
    "EN_ONES",
    "EN_TENS",
    "Found",
    "REJECTED",
    "REJECTED_ELSEWHERE",
    "RETRACTED",
    "Retraction",
    "Role",
    "SUPERSEDED",
    "Segment",
    "ZH_DIGITS",
    "ZH_SCALES",
    "assign_roles",
    "decide",
    "fold",
    "lexicon",
    "nfkc",
    "number_spans",
    "parse",
    "plain",
    "submit_solver",
    # text hygiene
    "MAX_DEPTH",
    "clean_text",
    "clean_value",
    "is_clean",
    "nesting_depth",
    # Inspect's running sample (adapters of its private names)
    "mcp_tool_source_local",
    "sample_model_usage",
    "sample_state",
    # reports, caches, data, models, timing, stored results
    "CopyingMemo",
    "DiskCache",
    "LruMemo",
    "RETRY_DEFAULTS",
    "Warehouse",
    "build_role_model",
    "code_version",
    "content_key",
    "file_digest",
    "file_key",
    "group_table",
    "markdown_table",
    "plots_wanted",
    "resolve_root",
    "save_figure",
    "stage",
]
