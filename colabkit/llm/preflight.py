"""Check, before anything runs, that every configured model can be called at all.

Without this, a model string litellm does not know or a provider key that is not set only
shows on the first call, and a session then spends its whole budget on failed steps (or a
batch, hundreds of sessions). `preflight` turns both into one `ColabkitError` line naming
the model and what is missing, without sending a request: it asks litellm which provider a
model string means and which environment variables that provider needs
(`litellm.validate_environment`). The embedded `local/...` models need their GGUF file.
An `api_base` (the config's, or the provider's `<PROVIDER>_API_BASE` variable) must accept a
TCP connection within `REACH_TIMEOUT_S`: a local server that is not running is one line too,
not an outage every session waits out. What only the provider can tell (a wrong key, an
unknown model name) is the gateway's `ProviderError` on the first call.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from colabkit.errors import ColabkitError
from colabkit.llm.config import ModelConfig
from colabkit.llm.providers import LOCAL_PROVIDER, is_custom, litellm_module, provider_message

# Variables litellm lists as missing although the provider has a default for them
# (Ollama serves on http://localhost:11434 unless told otherwise).
HAS_DEFAULT = {"OLLAMA_API_BASE"}
REACH_TIMEOUT_S = 3.0


def preflight(configs: Iterable[ModelConfig], *, keys: bool = True) -> None:
    """Raise a one-line `ColabkitError` for the first model in `configs` that cannot run here.

    `keys=False` checks everything but the provider keys (what a plan needs: the provider
    known, its address reachable); `missing_key` says what a run will still need."""
    seen: set[ModelConfig] = set()
    for config in configs:
        if config not in seen:
            seen.add(config)
            check_model(config, keys=keys)


def missing_key(config: ModelConfig) -> str | None:
    """The one-line error a run of `config`'s model stops on for want of a key, else None
    (a local or registered model needs none; an unknown provider is `check_model`'s error)."""
    if config.provider == LOCAL_PROVIDER or is_custom(config.provider):
        return None
    found = litellm_module().validate_environment(model=config.model, api_key=config.extra.get("api_key"),
                                                  api_base=config.api_base)
    missing = [name for name in found.get("missing_keys", []) if name not in HAS_DEFAULT]
    if not missing:
        return None
    what = f"variable {missing[0]}, which is" if len(missing) == 1 else f"variables {', '.join(missing)}, which are"
    return f"model {config.model!r} needs the environment {what} not set"


def check_model(config: ModelConfig, *, keys: bool = True) -> None:
    """Raise a one-line `ColabkitError` if `config`'s model cannot be called here (with
    `keys=False`, a missing provider key is let through)."""
    litellm = litellm_module()
    if config.provider == LOCAL_PROVIDER:
        from colabkit.llm.local import locate_gguf

        try:
            locate_gguf(config.model.partition("/")[2])
        except Exception as exc:
            raise ColabkitError(f"model {config.model!r}: {provider_message(exc)}") from None
        return
    if is_custom(config.provider):  # a registered handler (a test double, a user's provider)
        return
    try:
        litellm.get_llm_provider(model=config.model, api_base=config.api_base)
    except Exception:
        what = f"unknown provider {config.provider!r}" if config.provider else "no provider"
        raise ColabkitError(f"model {config.model!r}: {what}; write it as '<provider>/<model>' with a "
                            "provider litellm knows (https://docs.litellm.ai/docs/providers)") from None
    problem = missing_key(config) if keys else None
    if problem:
        raise ColabkitError(problem)
    check_reachable(config)


def api_base_of(config: ModelConfig) -> tuple[str, str] | None:
    """(the address `config`'s calls go to, where it was set) when one was set, else None
    (the provider's own public endpoint, which is not probed)."""
    if config.api_base:
        return config.api_base, "api_base"
    variable = f"{config.provider.upper()}_API_BASE"
    value = os.environ.get(variable, "").strip() if config.provider else ""
    return (value, variable) if value else None


def check_reachable(config: ModelConfig) -> None:
    """Raise a one-line `ColabkitError` if `config`'s `api_base` accepts no TCP connection."""
    found = api_base_of(config)
    if found is None:
        return
    base, where = found
    url = urlsplit(base if "://" in base else f"http://{base}")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ColabkitError(f"model {config.model!r}: {where} {base} is unreachable ({reason}); start the "
                            f"server or fix {where}") from None
