"""Model servers that a run starts itself (`model.serve`), e.g. the offline `model=local_llm`.

`model.serve` names its server factory Hydra-style, `_target_: package.module.function`; the
factory takes the rest of the mapping and is a context manager yielding the server's base URL.
The core finds it by that path (it never imports `geoeval.agents`), starts it before any sample
runs, points `model.base_url` at it, and stops it when the run ends, however it ends. A rescore
(`generation=replay_only`) answers every call of the evaluated model from its stored trajectory,
so it starts no server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from geoeval.core.errors import GeoevalError

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec


@contextmanager
def served_model(spec: RunSpec) -> Iterator[RunSpec]:
    """Yield `spec`, or a copy whose `model.base_url` is the URL of the server `model.serve`
    started (a configured `base_url` is passed to the factory, which may then start nothing).
    A rescore (`generation=replay_only`) never calls the evaluated model: nothing is started."""
    serve = spec.model.serve
    if not serve or spec.generation == "replay_only":
        yield spec
        return
    from geoeval.core.registry import load_target

    options = dict(serve)
    target = options.pop("_target_", None)
    if not target:
        raise GeoevalError(
            "Invalid config: model.serve._target_: name the server factory "
            "(e.g. geoeval.agents.local_llm.serve_local_llm)"
        )
    factory = load_target(str(target))
    if spec.model.base_url:
        options.setdefault("base_url", spec.model.base_url)
    with factory(options) as base_url:
        model = spec.model.model_copy(update={"base_url": base_url})
        yield spec.model_copy(update={"model": model})
