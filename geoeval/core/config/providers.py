"""The check that a model string names a known provider (`model.name`, `judge.models`): Inspect's
built-in providers and every `@modelapi` registered by geoeval's agents or a plugin."""

from __future__ import annotations

from geoeval.core import registry
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import registered_model_apis


def provider_names() -> set[str]:
    """The providers registered so far, read from Inspect's registry (Inspect's built-in ones,
    and those of the entry points imported so far)."""

    return {str(o.__registry_info__.name).split("/")[-1] for o in registered_model_apis()}


def check_provider(model: str, *, key: str) -> None:
    """A `GeoevalError` naming `key` unless the provider of `model` is registered; every plugin is
    imported before an unknown provider is refused (a plugin may register it)."""
    provider = model.split("/", 1)[0]
    if provider in provider_names():
        return
    registry.load_plugins()
    valid = provider_names()
    if provider not in valid:
        raise GeoevalError(
            f"Invalid config: {key}: unknown model provider '{provider}' in '{model}' "
            f"(valid providers: {', '.join(sorted(valid))})"
        )
