"""Pilot mode: every model call answered through a queue folder, one file each way.

A lab rehearses its prompts with any capable answerer (a person at a console, an external
program, another model behind a script) before it pays for a grid: name a role's model
`pilot/<answerer>` (every role, `default`, for a whole session: every seat and the memory
build) and each call the session makes to it is written to the queue folder as one request
file; the call returns when an answer file appears beside it.

- The folder is `$COLABKIT_PILOT_QUEUE` (default `pilot-queue` in the working directory): it is
  where the answerer works, not what the session is, so it is in no identity.
- A request is `<id>.request.json`: `id`, `answerer` (the model string's name), `caller` (the
  participant), `messages` exactly as a model would get them, `schema` (the JSON schema the
  answer must match, or null for free text) and `created`. The id is its order in this
  process, then the caller, so a listing is in the order the session asked.
- The answer is `<id>.answer.txt` (any editor can write one): the answer's text, e.g. the JSON
  object. A careful answerer writes it under another name and renames it; the reader here
  takes a file only once it holds a complete JSON object or, for free text, once it is
  non-empty. A request is written the same way (`<id>.request.partial`, then renamed). An invalid answer is a model's invalid answer: the gateway asks for one repair
  (a second request file), then the step fails, as the study's rules say.
- The record names the answerer honestly: the spec's model is `pilot/<answerer>` (so the
  session id, the record and every table say a pilot answered, never the model it stands
  in for), and each call's record has the model `pilot/<answerer>`, zero cost and no tokens.

A pilot's answers are cached like any model's, so a piloted session replays offline. The
call waits as long as the model config's `timeout` (120 s by default: raise it for a person);
past it the call fails as a provider's timeout does (the gateway retries: a new request file).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.errors import ColabkitError

PILOT_PROVIDER = "pilot"
QUEUE_ENV = "COLABKIT_PILOT_QUEUE"
POLL_S = 0.05
DEFAULT_WAIT_S = 120.0  # the model config's `timeout` when litellm passes none
_numbers = itertools.count(1)


def queue_folder() -> Path:
    """Where requests are written and answers read (`$COLABKIT_PILOT_QUEUE`, else ./pilot-queue)."""
    return Path(os.environ.get(QUEUE_ENV) or "pilot-queue")


def _schema(optional_params: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the gateway asked for (json_schema mode), if any."""
    fmt = optional_params.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    return None


def _complete(text: str, schema: dict[str, Any] | None) -> bool:
    """Whether an answer file is finished: a whole JSON object when a schema is asked for."""
    if not text.strip():
        return False
    if schema is None:
        return True
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class PilotProvider(CustomLLM):
    """The `pilot/...` provider: writes each request to the queue folder and awaits its answer file."""

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """A blocking call is refused: a pilot answer may take a person minutes, so only the
        gateway's asynchronous path waits for it."""
        raise ColabkitError("the pilot provider answers asynchronous calls only (the gateway's)")

    async def acompletion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                          model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                          logging_obj: Any, optional_params: dict, acompletion: Any = None,
                          litellm_params: dict | None = None, logger_fn: Any = None, headers: Any = None,
                          timeout: Any = None, client: Any = None) -> ModelResponse:
        metadata = (litellm_params or {}).get("metadata") or {}
        caller = str(metadata.get("caller") or "member")
        schema = _schema(optional_params)
        folder = queue_folder()
        folder.mkdir(parents=True, exist_ok=True)
        request_id = f"{next(_numbers):05d}-{os.getpid()}-{caller}"
        request = {"id": request_id, "answerer": model, "caller": caller, "messages": messages, "schema": schema,
                   "created": time.time()}
        temporary = folder / f"{request_id}.request.partial"  # renamed once whole: a reader never sees half
        temporary.write_text(json.dumps(request, indent=1))
        temporary.rename(folder / f"{request_id}.request.json")
        answer = folder / f"{request_id}.answer.txt"
        deadline = time.monotonic() + float(timeout or DEFAULT_WAIT_S)
        while True:
            text = answer.read_text() if answer.is_file() else ""
            if _complete(text, schema):
                break
            if time.monotonic() > deadline:  # infrastructure, as an unreachable provider: the gateway retries
                raise litellm.Timeout(f"no answer file {answer} within {timeout or DEFAULT_WAIT_S} s",
                                      model=model, llm_provider=PILOT_PROVIDER)
            await asyncio.sleep(POLL_S)
        model_response.choices[0].message.content = text.strip()
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PILOT_PROVIDER}/{model}"
        model_response.usage = Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0)  # type: ignore[attr-defined]
        return model_response
