"""How much of the session a participant's prompt may hold: one profile per run, from the models.

The study's rule is that only the persona prompts and the collaboration structure vary, so
what a participant sees must not be shaped by the smallest model the code happens to run
on. The profile is therefore derived from the context window of the models a run uses, and
from nothing else:

- "full" (a window of at least `FULL_MIN_TOKENS`, e.g. DeepSeek V3 or GPT-4o): nothing is cut.
  Briefings, the memory, the query, the editor and every message are whole; the notebook is
  shown whole up to a character budget (a share of the window), and when it does not fit
  the oldest outputs are summarised first, then the oldest cells left out; code cells and
  answers may run to several thousand characters, as far as the smallest known output
  limit (`max_output_tokens`) allows, since the gateway asks for as many tokens as the
  answer schema's bounds could need (one per character, worst case). A participant's own
  thoughts, activity and decided requests are entries of its timeline (`timeline`), so a
  step's prompt appends to the previous one and a provider's prefix cache serves the rest.
- "compact" (the embedded 135M model, whose llama.cpp context is `N_CTX` tokens, and any
  model whose window is unknown, so a prompt can never overflow): the sizes the embedded
  model was tuned to, section by section, and short memory-build answers.

The window comes from, in this order: `SessionSettings.context_window` (an explicit
override), the embedded model's `N_CTX` for `local/...` models, litellm's model info
(`litellm.get_model_info`, read offline from its bundled price map). With several models in
a run the smallest window decides, and every role counts whether or not the variant uses it,
so all 13 variants of one run get the same profile (the single agent does not see more than
the AI agent of a team). The resolved profile is a field of `SessionSpec`: recorded with the
session and hashed into its identity, so a session is reproducible from its spec alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from colabkit.llm import ModelConfig
from colabkit.session.seats.person import is_person, seat_terms
from colabkit.team.gates import NOTE_MAX_CHARS
from colabkit.team.memory import ENFORCEABLE_GATES, MAX_GATES

FULL_MIN_TOKENS = 32_768
CHARS_PER_TOKEN = 3  # conservative for English and code (tokenizers average ~4)
NOTEBOOK_SHARE, CHAT_SHARE = 0.35, 0.10  # of the window; the rest is persona, briefing, memory, answer
FULL_THOUGHT_CHARS, FULL_CONTENT_CHARS, FULL_SLOT_CHARS = 1000, 6000, 1200
# The embedded model's memory-build sizes: a proposal is four slots plus a gate table, and its
# length (decoded at 14-25 ms of CPU per token) was most of the build phase's time; with 280
# characters per slot, answers ran to 900 tokens. Shown to the consolidator, a proposal is
# clipped at about two and a half slots.
COMPACT_SLOT_CHARS, COMPACT_PROPOSAL_CHARS = 160, 400
# A gate item with a 120-character note is up to ~55 tokens; the compact gate table holds as
# many gates as can take effect (`ENFORCEABLE_GATES`), with short notes.
COMPACT_GATE_NOTE_CHARS = 60
_GATES_TOKENS, _SLACK_TOKENS = 2200, 300  # a memory answer's bound besides its slots; spare


class ObservationProfile(BaseModel):
    """Per-section sizes of an observation and of the answers asked for; None means uncut / all."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Literal["compact", "full"]
    context_window: int | None = Field(description="tokens the profile was derived from; None = unknown")
    max_output_tokens: int | None = Field(default=None, description="smallest known output limit of the models")
    source: str = Field(description="where the window came from (override, local n_ctx, litellm, unknown)")
    # what a participant sees
    query_chars: int | None
    briefing_chars: int | None
    memory_chars: int | None
    editor_chars: int | None
    messages: int | None
    message_chars: int | None
    chat_chars: int | None
    cells: int | None
    code_chars: int | None
    output_chars: int | None
    notebook_chars: int
    summary_chars: int
    activity: int | None = Field(description="the most recent activity lines shown after the timeline; "
                                 "None: the timeline layout")
    activity_chars: int
    requests: int
    request_chars: int | None
    request_cells: int
    notes: int | None = Field(description="the most recent thoughts shown near the end; None: the timeline layout")
    note_chars: int | None
    feedback_chars: int | None
    # what a participant may write
    thought_chars: int
    content_chars: int
    slot_chars: int
    proposal_chars: int | None
    max_gates: int
    gate_note_chars: int

    @model_validator(mode="after")
    def _one_layout(self) -> ObservationProfile:
        if (self.notes is None) != (self.activity is None):
            raise ValueError("notes and activity are both None (the timeline layout) or both counts")
        return self

    @property
    def timeline(self) -> bool:
        """The layout where a step's prompt only appends to the participant's previous one.

        The participant's own thoughts, its activity list (the whole team's for the AI agent)
        and its decided requests are entries of the timeline, in the order they happened,
        the most recent that fit `chat_chars` together (trimmed like the chat, so a long
        session still fits the window); only what is current (the editor, open requests, a
        failed last step, round and budget) follows it. Otherwise (compact) they are
        sections after the timeline holding the `notes`, `activity` and `requests` most
        recent, and the last step's outcome is always said.
        """
        return self.notes is None


def compact_profile(window: int | None, source: str) -> ObservationProfile:
    """The embedded model's sizes: a worst-case prompt near 2,500 tokens with the persona.

    The action in a request is shown whole (`request_chars` = `content_chars`), so a
    signatory always decides on what was actually proposed.
    """
    return ObservationProfile(
        name="compact", context_window=window, source=source,
        query_chars=400, briefing_chars=1600, memory_chars=1400, editor_chars=400,
        messages=5, message_chars=200, chat_chars=None,
        cells=2, code_chars=250, output_chars=350, notebook_chars=1400, summary_chars=120,
        activity=6, activity_chars=100, requests=3, request_chars=500, request_cells=2,
        notes=4, note_chars=160, feedback_chars=200,
        thought_chars=200, content_chars=500, slot_chars=COMPACT_SLOT_CHARS, proposal_chars=COMPACT_PROPOSAL_CHARS,
        max_gates=ENFORCEABLE_GATES, gate_note_chars=COMPACT_GATE_NOTE_CHARS,
    )


def full_profile(window: int, source: str, max_output: int | None = None) -> ObservationProfile:
    """Nothing cut; the notebook and the chat get a share of the window each.

    Answer lengths shrink (never below the compact ones) when a model's output limit could
    not hold the longest answer: a step is its thought plus its content, a memory answer
    four slots plus a gate table and keys (about `_GATES_TOKENS`).
    """
    content, slots = FULL_CONTENT_CHARS, FULL_SLOT_CHARS
    if max_output is not None:
        content = max(min(content, max_output - FULL_THOUGHT_CHARS - _SLACK_TOKENS), 500)
        slots = max(min(slots, (max_output - _GATES_TOKENS - _SLACK_TOKENS) // 4), 280)
    return ObservationProfile(
        name="full", context_window=window, max_output_tokens=max_output, source=source,
        query_chars=None, briefing_chars=None, memory_chars=None, editor_chars=None,
        messages=None, message_chars=None, chat_chars=int(window * CHARS_PER_TOKEN * CHAT_SHARE),
        cells=None, code_chars=6000, output_chars=None,
        notebook_chars=int(window * CHARS_PER_TOKEN * NOTEBOOK_SHARE), summary_chars=200,
        activity=None, activity_chars=400, requests=10, request_chars=None, request_cells=5,
        notes=None, note_chars=None, feedback_chars=2000,
        thought_chars=FULL_THOUGHT_CHARS, content_chars=content, slot_chars=slots, proposal_chars=None,
        max_gates=MAX_GATES, gate_note_chars=NOTE_MAX_CHARS,
    )


def profile_for_window(window: int | None, source: str, max_output: int | None = None) -> ObservationProfile:
    """"full" for a window of at least `FULL_MIN_TOKENS`, else (or unknown) "compact"."""
    if window is not None and window >= FULL_MIN_TOKENS:
        return full_profile(window, source, max_output)
    return compact_profile(window, source)


def context_window(config: ModelConfig) -> tuple[int | None, str]:
    """The model's input window in tokens and where that figure came from (None if unknown)."""
    window, _, source = _limits(config)
    return window, source


def _limits(config: ModelConfig) -> tuple[int | None, int | None, str]:
    """(input window, output limit, source) in tokens; None where unknown."""
    if is_person(config):  # a person sees what the persona's model would have: its profile
        return _limits(seat_terms(config).persona_model)
    if config.provider == "local":
        from colabkit.llm.local import N_CTX

        return N_CTX, None, f"embedded model n_ctx ({config.model})"
    from colabkit.llm.providers import litellm_module

    try:
        info = litellm_module().get_model_info(config.model)
    except Exception:  # litellm raises several types for unmapped models
        return None, None, f"unknown window ({config.model}: not in litellm's model info)"
    window = info.get("max_input_tokens") or info.get("max_tokens")
    output = info.get("max_output_tokens")
    if not window:
        return None, None, f"unknown window ({config.model}: litellm's model info has no size)"
    return int(window), int(output) if output else None, f"litellm model info ({config.model})"


def resolve_profile(models: Iterable[ModelConfig], override: int | None = None) -> ObservationProfile:
    """The one profile for a run on `models`: the override, else the smallest known window.

    An unknown window counts as the smallest (compact), so a profile never promises a
    model more than it can read.
    """
    found = [_limits(config) for config in dict.fromkeys(models)] or [_limits(ModelConfig())]
    outputs = [output for _, output, _ in found if output is not None]
    max_output = min(outputs) if outputs else None
    if override is not None:
        return profile_for_window(override, "settings.context_window", max_output)
    unknown = [source for window, _, source in found if window is None]
    if unknown:
        return profile_for_window(None, unknown[0])
    window, _, source = min(found, key=lambda item: item[0] or 0)
    return profile_for_window(window, source, max_output)
