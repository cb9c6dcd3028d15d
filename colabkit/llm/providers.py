"""litellm, set up once: offline, quiet, and with colabkit's own providers installed.

litellm is imported on first use rather than with `colabkit.llm`, because the import costs
~4 s and most CLI commands never call a model. Before it is imported the environment must
say `LITELLM_LOCAL_MODEL_COST_MAP=True`, or the import fetches the price table from GitHub
(blocking up to 5 s on a stalled network, then retrying in a thread); `colabkit.llm` sets
that on import and so does this module, in case it is imported on its own.

Custom providers are plain `litellm.CustomLLM` handlers in `litellm.custom_provider_map`;
litellm re-reads that map on every call, so registering one is just replacing its entry.
A provider registered in one process is unknown to the processes a batch starts (papermill
kernels, Dask workers), so `COLABKIT_PROVIDER_PLUGINS` names functions (`module:function`,
comma-separated) that every process calls at setup; each returns {provider name: handler}.
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from types import ModuleType
from typing import TYPE_CHECKING

from colabkit.errors import ColabkitError

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

if TYPE_CHECKING:
    from litellm import CustomLLM

LOCAL_PROVIDER = "local"
PLUGINS_ENV = "COLABKIT_PROVIDER_PLUGINS"
_setup_lock = threading.Lock()
_ready = False


def litellm_module() -> ModuleType:
    """The configured litellm module, with the embedded `local/...` provider registered."""
    global _ready
    if not _ready:
        with _setup_lock:
            if not _ready:
                # litellm's TypedDicts make pydantic warn once per class (at import and on
                # first calls); it is about litellm's internals and only clutters stderr.
                warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier",
                                        category=UserWarning)
                import litellm

                litellm.suppress_debug_info = True  # else error banners go to stdout
                from colabkit.llm.local import shared_local_provider

                _install(litellm, LOCAL_PROVIDER, shared_local_provider())
                for name, handler in _plugin_providers().items():
                    _install(litellm, name, handler)
                _ready = True
    import litellm

    return litellm


def _plugin_providers() -> dict[str, CustomLLM]:
    """The providers the functions named in `COLABKIT_PROVIDER_PLUGINS` return."""
    found: dict[str, CustomLLM] = {}
    for entry in filter(None, (e.strip() for e in os.environ.get(PLUGINS_ENV, "").split(","))):
        module, _, function = entry.partition(":")
        try:
            found.update(getattr(importlib.import_module(module), function or "providers")())
        except Exception as exc:
            raise ColabkitError(f"{PLUGINS_ENV} entry {entry!r} failed: {type(exc).__name__}: {exc}") from exc
    return found


def register_provider(name: str, handler: CustomLLM) -> None:
    """Serve model strings `"<name>/..."` with `handler`, replacing any earlier handler.

    The name must not be a built-in litellm provider: litellm would silently route those
    model strings to its own handler instead.
    """
    litellm = litellm_module()
    if not isinstance(handler, litellm.CustomLLM):
        raise ColabkitError(f"provider {name!r}: handler must be a litellm.CustomLLM, "
                            f"got {type(handler).__name__}")
    _install(litellm, name, handler)


def _install(litellm: ModuleType, name: str, handler: CustomLLM) -> None:
    from litellm.types.utils import LlmProvidersSet

    if not name or "/" in name:
        raise ColabkitError(f"provider name {name!r} must be non-empty and contain no '/'")
    if name in LlmProvidersSet:
        raise ColabkitError(f"provider name {name!r} is a built-in litellm provider; pick another")
    others = [item for item in litellm.custom_provider_map if item["provider"] != name]
    litellm.custom_provider_map = [*others, {"provider": name, "custom_handler": handler}]


def is_custom(provider: str) -> bool:
    """Whether `provider` is served by a registered `CustomLLM` (embedded, scripted, fakes)."""
    litellm = litellm_module()
    return any(item["provider"] == provider for item in litellm.custom_provider_map)
