"""litellm, set up once: offline, quiet, and with colabkit's own providers installed.

litellm is imported on first use rather than with `colabkit.llm`, because the import costs
~4 s and most CLI commands never call a model. Before it is imported the environment must
say `LITELLM_LOCAL_MODEL_COST_MAP=True`, or the import fetches the price table from GitHub
(blocking up to 5 s on a stalled network, then retrying in a thread); `colabkit.llm` sets
that on import and so does this module, in case it is imported on its own.

Custom providers are plain `litellm.CustomLLM` handlers in `litellm.custom_provider_map`;
litellm re-reads that map on every call, so registering one is just replacing its entry.

It also holds what colabkit knows about providers beyond litellm's tables: how to ask each
one for structured output (`starting_mode`, with `KNOWN_MODES` for providers whose litellm
capability flags are wrong) and what a provider's error means (`classify`).

A provider registered in one process is unknown to the processes a batch starts (papermill
kernels, Dask workers), so `COLABKIT_PROVIDER_PLUGINS` names functions (`module:function`,
comma-separated) that every process calls at setup; each returns {provider name: handler}.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import threading
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from colabkit.errors import ColabkitError
from colabkit.llm.config import ModelConfig
from colabkit.llm.records import OutputMode

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

if TYPE_CHECKING:
    from litellm import CustomLLM

LOCAL_PROVIDER = "local"
# Providers whose litellm flags promise more than their API accepts. DeepSeek's chat API takes
# `response_format` "text" or "json_object" only and answers HTTP 400 "This response_format
# type is unavailable now" to "json_schema", though litellm marks it as supporting response
# schemas (litellm issues #7580, #7646; the fixes, PRs #31466 and #42245, were not merged).
KNOWN_MODES: dict[str, OutputMode] = {"deepseek": "json_object"}
# When a provider rejects a request for its `response_format`, the next mode to try.
FALLBACK: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "instructions"}
# Statuses a retry cannot fix: malformed request, bad key, no credit, no permission, unknown model.
_FATAL_STATUS = {400, 401, 402, 403, 404, 422}
_RETRY_STATUS = {408, 409, 429}
_FORMAT_WORDS = ("response_format", "response format", "json_schema", "json_object", "structured output")
ErrorKind = Literal["retry", "format", "fatal", "failed"]
PLUGINS_ENV = "COLABKIT_PROVIDER_PLUGINS"
_setup_lock = threading.Lock()
_ready = False


def litellm_module() -> ModuleType:
    """The configured litellm module, with the embedded `local/...` and the `pilot/...`
    (`colabkit.llm.pilot`) providers registered."""
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
                _import_what_the_first_failure_would()
                from colabkit.llm.local import shared_local_provider
                from colabkit.llm.pilot import PILOT_PROVIDER, PilotProvider

                _install(litellm, LOCAL_PROVIDER, shared_local_provider())
                _install(litellm, PILOT_PROVIDER, PilotProvider())  # answers through a queue folder
                for name, handler in _plugin_providers().items():
                    _install(litellm, name, handler)
                _ready = True
    import litellm

    return litellm


def _import_what_the_first_failure_would() -> None:
    """litellm maps a call's first failure through its guardrail check, which imports FastAPI
    (where installed): 0.3 s, and over a second on a busy machine, on the event loop every
    session of a batch shares, at whatever moment the first 429 comes. Here it is paid once,
    where litellm itself is imported."""
    try:
        import fastapi.exceptions  # noqa: F401
    except ImportError:
        pass


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
    # litellm sets `custom_provider_map` at import time; its lazy module hides it from type checkers.
    others = [item for item in litellm.custom_provider_map if item["provider"] != name]
    litellm.custom_provider_map = [*others, {"provider": name, "custom_handler": handler}]  # type: ignore[attr-defined]


def is_custom(provider: str) -> bool:
    """Whether `provider` is served by a registered `CustomLLM` (embedded, scripted, fakes)."""
    litellm = litellm_module()
    return any(item["provider"] == provider for item in litellm.custom_provider_map)


def starting_mode(config: ModelConfig) -> OutputMode:
    """How to ask `config`'s model for a schema first (the gateway falls back on rejection).

    Registered custom providers (the embedded model, test doubles) get the schema itself,
    which the embedded model turns into a decoding grammar; then the table of known
    exceptions; then litellm's flags: native schemas, else JSON mode, else instructions only.
    """
    litellm = litellm_module()
    if is_custom(config.provider):
        return "json_schema"
    found = _safe(litellm.get_llm_provider, model=config.model)
    provider = found[1] if found else config.provider
    if provider in KNOWN_MODES:
        return KNOWN_MODES[provider]
    if _safe(litellm.supports_response_schema, model=config.model):
        return "json_schema"
    supported = _safe(litellm.get_supported_openai_params, model=config.model) or []
    return "json_object" if "response_format" in supported else "instructions"


def classify(exc: BaseException, *, sent_format: bool) -> ErrorKind:
    """What a failed request means for the next one.

    "retry": transient (timeout, connection, 408/409/429, 5xx). "format": the provider
    rejected the `response_format` we sent (HTTP 400/422 naming it), so another mode may
    work. "fatal": no retry can succeed (other 400/422, 401, 402, 403, 404), so the caller
    must stop. "failed": anything else, including refusals that depend on this one prompt
    (content policy, context window), which only fail this request.
    """
    litellm = sys.modules.get("litellm")
    transient: tuple[type[BaseException], ...] = (TimeoutError, asyncio.TimeoutError)
    if litellm is not None:
        transient += (litellm.Timeout, litellm.APIConnectionError)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return "retry" if isinstance(exc, transient) else "failed"
    if status in _RETRY_STATUS or status >= 500:
        return "retry"
    if status not in _FATAL_STATUS:
        return "retry" if isinstance(exc, transient) else "failed"
    text = str(exc).lower()
    if sent_format and status in (400, 422) and any(word in text for word in _FORMAT_WORDS):
        return "format"
    if litellm is not None and isinstance(exc, (litellm.ContentPolicyViolationError,
                                                litellm.ContextWindowExceededError)):
        return "failed"
    return "fatal"


def provider_message(exc: BaseException) -> str:
    """The provider's own words from a litellm exception, without litellm's wrapping.

    litellm words an HTTP error as `litellm.XError: <Provider>Exception - <body>`; the
    OpenAI-style body `{"error": {"message": ...}}` holds what the provider said.
    """
    text = " ".join(str(exc).split())
    _, dash, rest = text.partition(" - ")
    body = rest if dash else text
    start = body.find("{")
    if start >= 0:
        try:
            decoded = json.loads(body[start:])
        except ValueError:
            decoded = None
        error = decoded.get("error") if isinstance(decoded, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    while body.startswith("litellm.") and ": " in body:
        body = body.split(": ", 1)[1]
    return body


def _safe(function: Any, **kwargs: Any) -> Any:
    """litellm capability look-ups raise for models they do not know; treat that as 'no'."""
    try:
        return function(**kwargs)
    except Exception:
        return None
