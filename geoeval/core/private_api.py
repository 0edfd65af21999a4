"""Every private Inspect AI, Hydra and Ray API that geoeval uses, in one place.

Inspect, Hydra and Ray keep these names out of their public API, so a release may move or change them.
Importing them only here means an upgrade breaks one file, with one clear error naming the name
that moved, instead of a traceback from a suite; `tests/core/test_private_api.py` checks each one
against the installed versions, and `tests/core/test_architecture.py` fails on any private
import elsewhere. Each function says why there is no public way.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from geoeval.core.errors import GeoevalError


def _moved(name: str, exc: Exception) -> GeoevalError:

    return GeoevalError(
        f"{name} is not where geoeval expects it in this version of its dependency "
        f"(inspect-ai {version('inspect-ai')}, hydra-core {version('hydra-core')}, "
        f"ray {version('ray')}): {exc}; install the versions pinned in pyproject.toml"
    )


def sample_state() -> Any:
    """The `TaskState` of the sample running in this task (None outside one). Offline agents and
    tools read the sample's metadata through it; Inspect exposes the state to solvers and scorers
    only as an argument, never to a model provider or a tool."""
    try:
        from inspect_ai.solver._task_state import sample_state as found
    except ImportError as exc:
        raise _moved("inspect_ai.solver._task_state.sample_state", exc) from None
    return found()


def sample_model_usage() -> dict[str, Any]:
    """Token usage of every model called in the running sample, by model name (Inspect records it
    per sample, but publishes only the whole eval's totals)."""
    try:
        from inspect_ai.model._model import sample_model_usage as found
    except ImportError as exc:
        raise _moved("inspect_ai.model._model.sample_model_usage", exc) from None
    return found() or {}


def registered_model_apis() -> list[Any]:
    """Every `@modelapi` class registered so far, Inspect's built-in providers included (Inspect
    has no public listing of its providers)."""
    try:
        import inspect_ai.model._providers.providers  # noqa: F401  registers Inspect's providers
        from inspect_ai._util.registry import registry_find
    except ImportError as exc:
        raise _moved("inspect_ai._util.registry.registry_find", exc) from None
    return list(registry_find(lambda info: info.type == "modelapi"))


def http_retries_count() -> int:
    """HTTP retries Inspect has counted in this process (its display footer reads the same
    private counter; there is no public accessor)."""
    try:
        from inspect_ai._util.retry import http_retries_count as found
    except ImportError as exc:
        raise _moved("inspect_ai._util.retry.http_retries_count", exc) from None
    return int(found())


def mcp_tool_source_local() -> type:
    """Inspect's local MCP tool-source class: `mcp_connection(tools)` recognises a source by
    this type and keeps its server open for the sample, so a source that wraps its tools must
    subclass it."""
    try:
        from inspect_ai.tool._mcp.tools import MCPToolSourceLocal
    except ImportError as exc:
        raise _moved("inspect_ai.tool._mcp.tools.MCPToolSourceLocal", exc) from None
    return MCPToolSourceLocal


def label_task(task: Any, args: dict[str, Any], display_name: str | None = None) -> None:
    """Give an Inspect `Task` built in code the task args `inspect view` shows (its log's
    `eval.task_args`) and a display name (`eval.task_display_name`, the viewer's TASK column):
    Inspect reads the args from the registry parameters a `@task` function call records, and
    takes the display name only as a `Task(...)` argument, which a suite's task was built
    without, so fifty logs of a sweep all read `maptab` with no args."""
    try:
        from inspect_ai._util.registry import set_registry_params
    except ImportError as exc:
        raise _moved("inspect_ai._util.registry.set_registry_params", exc) from None
    set_registry_params(task, args)
    if display_name is not None:
        if not hasattr(task, "_display_name"):
            raise _moved("inspect_ai.Task._display_name", AttributeError("_display_name"))
        task._display_name = display_name


def hydra_sources_registry() -> Any:
    """Hydra's registry of config-source schemes: the way to add one (`geoeval-experiments://`)
    without the `hydra_plugins` namespace package, which editable installs hide from its scan."""
    try:
        from hydra._internal.sources_registry import SourcesRegistry
    except ImportError as exc:
        raise _moved("hydra._internal.sources_registry.SourcesRegistry", exc) from None
    return SourcesRegistry.instance()


def hydra_loader_config_sources(loader: Any) -> list[Any]:
    """The config sources (`pkg://`, `file://`, ...) of a Hydra config loader's repository, in
    search-path order. Hydra reads and parses every config file again for every composition and
    offers no hook to keep what it read (`geoeval.core.sweep.compositions.share_config_files`)."""
    try:
        return list(loader.repository.get_sources())
    except AttributeError as exc:
        raise _moved("hydra._internal.config_loader_impl.ConfigLoaderImpl.repository", exc) from None


def basic_sweeper_batches(parsed_overrides: list[Any]) -> list[list[str]]:
    """The jobs Hydra's basic sweeper makes of parsed overrides, each as its override list, in
    its order (its expansion rule is not public; validating every job of a sweep before the
    first starts needs exactly it)."""
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    except ImportError as exc:
        raise _moved("hydra._internal.core_plugins.basic_sweeper.BasicSweeper", exc) from None
    batches = BasicSweeper.split_arguments(parsed_overrides, max_batch_size=None)
    return [list(combo) for combo in batches[0]] if batches else [[]]


def ray_local_node_processes() -> dict[str, list[Any]]:
    """The processes (`subprocess.Popen`) of the Ray node this process started with `ray.init()`,
    by Ray's process type ("raylet", "gcs_server", "monitor", ...); empty when it started none
    (not initialised, or connected to a cluster). Ray has no public handle on them, and its
    shutdown waits a second for the autoscaler monitor, which ignores SIGTERM
    (`run.ray_session.shutdown_ray` stops that one at once)."""
    try:
        from ray._private import worker
    except ImportError as exc:
        raise _moved("ray._private.worker", exc) from None
    node = getattr(worker, "_global_node", None)
    if node is None:
        return {}
    try:
        processes = node.all_processes
    except AttributeError as exc:
        raise _moved("ray._private.node.Node.all_processes", exc) from None
    return {kind: [info.process for info in infos] for kind, infos in processes.items()}


#: Characters per token of the offline estimate (a common rule of thumb for English and code).
CHARS_PER_TOKEN = 4.0
_OFFLINE_TOKENS: dict[str, bool] = {"installed": False, "fallback": False}


def install_offline_token_estimate() -> None:
    """Inspect estimates token counts (for its mock model's usage, and context limits) with
    tiktoken's `o200k_base` encoding, which tiktoken downloads on first use. Without network and
    without a cached encoding that download fails and fails the model call. This wraps Inspect's
    estimator so that, once the encoding cannot be loaded, it estimates ~4 characters per token
    with Inspect's own 10% buffer instead (an estimate either way: no score depends on it).
    Idempotent; a changed Inspect that no longer has the estimator is left as it is."""
    if _OFFLINE_TOKENS["installed"]:
        return
    try:
        from inspect_ai.model import _model
    except ImportError:
        return
    original = getattr(_model, "count_text_tokens", None)
    if original is None:
        return

    def count_text_tokens(text: str) -> int:
        if not _OFFLINE_TOKENS["fallback"]:
            try:
                return original(text)
            except Exception:  # noqa: BLE001 - no encoding here (offline): estimate from now on
                _OFFLINE_TOKENS["fallback"] = True
        return max(1, int(len(text) / CHARS_PER_TOKEN * 1.1))

    # Inspect's calls go through this module's name, which it imports from `._tokens` without re-exporting it
    _model.count_text_tokens = count_text_tokens  # type: ignore[attr-defined]  # patched in place, see above
    _OFFLINE_TOKENS["installed"] = True


def bound_omegaconf_yaml(bounded: Any) -> None:
    """Make every YAML document OmegaConf loads (`OmegaConf.load`, which Hydra's config sources
    call for each config file) go through `bounded(loader class)` (`config.yaml_bounds.bounded`):
    OmegaConf builds its PyYAML loader in a private function, `omegaconf._utils.get_yaml_loader`,
    looked up at each load, and takes no loader from its callers. Idempotent."""
    try:
        from omegaconf import _utils
    except ImportError as exc:
        raise _moved("omegaconf._utils.get_yaml_loader", exc) from None
    original = getattr(_utils, "get_yaml_loader", None)
    if original is None:
        raise _moved("omegaconf._utils.get_yaml_loader", AttributeError("get_yaml_loader"))
    if getattr(original, "_geoeval_bounded", False):
        return

    def get_yaml_loader() -> Any:
        return bounded(original())

    get_yaml_loader._geoeval_bounded = True  # type: ignore[attr-defined]
    _utils.get_yaml_loader = get_yaml_loader


def inspect_first_sample_modules() -> tuple[str, ...]:
    """The modules Inspect imports inside its first `eval()` and first sample rather than at
    `import inspect_ai`, by name: its Agent Client Protocol server and the live transport every
    sample opens (`acp_session`; `acp.schema`'s pydantic models, ~1.3 s of CPU on 2 cores). The
    warm server (`geoeval.cli.warm_server`) imports them once for every run it starts. Private
    names, so listed here; `tests/core/test_private_api.py` imports each."""
    return (
        "inspect_ai.agent._acp.server",
        "inspect_ai.agent._acp.transport_live",
        "inspect_ai.agent._acp.event_mapping",
        "inspect_ai.log._recorders.buffer.database",
    )
