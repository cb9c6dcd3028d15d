"""Every model call in colabkit: one gateway over litellm, offline by default.

The default model `local/smollm2-135m` runs in this process (llama.cpp), needs no network
and no key; any litellm model string (`deepseek/deepseek-chat`, `openai/gpt-4o`, ...)
switches provider, with keys from the provider's usual environment variables.

Importing this package sets `LITELLM_LOCAL_MODEL_COST_MAP=True` (unless already set) so
litellm, imported lazily on the first call, never fetches its price table from the network.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from colabkit.llm.config import DEFAULT_MODEL, ModelConfig
from colabkit.llm.cost import Spend
from colabkit.llm.gateway import Gateway
from colabkit.llm.prompts import PromptLog, logging_prompts, prompt_hash
from colabkit.llm.providers import register_provider
from colabkit.llm.records import (
    Budget,
    BudgetExceeded,
    CallRecord,
    LLMCallError,
    OutputMode,
    ProviderError,
    ProviderUnavailable,
    StructuredOutputError,
)
from colabkit.llm.retry import CircuitBreaker, RetryPolicy

__all__ = [
    "DEFAULT_MODEL",
    "Budget",
    "BudgetExceeded",
    "CallRecord",
    "CircuitBreaker",
    "Gateway",
    "LLMCallError",
    "ModelConfig",
    "OutputMode",
    "PromptLog",
    "ProviderError",
    "ProviderUnavailable",
    "RetryPolicy",
    "Spend",
    "StructuredOutputError",
    "logging_prompts",
    "prompt_hash",
    "register_provider",
]
