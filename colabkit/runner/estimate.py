"""What a session of given settings asks its models: the dry run's estimate, and its check.

`session_model` is the one place the per-role step model lives (change it here): under the
session clock of issue 33 the AI agent's budget is the clock, so the AI takes its budget in
steps (`AI_BUDGET_SHARE` of it: a finish is the model's choice, unknown before a run), each
simulated human takes one step per round while the AI acts, up to its own cap, and no human
steps after the AI's last; the rounds are capped by `max_rounds`, all steps by
`team_action_budget`. Every step is one model call, plus `REPAIR_SHARE` repair requests.
Memory variants first build their memory (`BUILD_CALLS_PER_MEMBER` per member plus one).
A prompt is the fixed part (`BASE_PROMPT_TOKENS`: system prompt, persona, task, schema) plus
what the steps before it added (`GROWTH_PER_STEP_TOKENS` each), up to what the session's
observation profile can show. The judge asks `JUDGE_QUESTIONS` per metric per session (times
the repeats); a share of each prompt (`CACHED_SHARE`) is served from the provider's cache.

`assumptions` prints each of these as one line. Measured figures replace the model: a batch
stores what its sessions and judge did per variant and settings (`record_measured`, in the
results root's `calibration.jsonl`), and the next estimate for the same settings reads them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from colabkit.hashing import sha256_hex
from colabkit.session import SessionSpec

AI_BUDGET_SHARE = 1.0
REPAIR_SHARE = 0.10
BUILD_CALLS_PER_MEMBER = 2
BASE_PROMPT_TOKENS = 800
GROWTH_PER_STEP_TOKENS = 60
COMPLETION_TOKENS = 120
CHARS_PER_TOKEN = 4
CACHED_SHARE = 0.85
JUDGE_QUESTIONS: dict[str, float] = {"performance": 4, "s_hyp": 2, "initiative": 2, "gates": 2, "a_profile": 2,
                                     "c_wf": 5}
"""Judge requests per session and repeat, per metric (team-only metrics ask nothing of `single`)."""
TEAM_ONLY = {"initiative", "gates", "a_profile"}
JUDGE_PROMPT_TOKENS = 711
JUDGE_COMPLETION_TOKENS = 80
CALIBRATION = "calibration.jsonl"


class SessionModel(BaseModel):
    """Model calls of one session and their mean size, by role, as `session_model` reckons them."""

    ai_steps: float
    human_steps: float
    """All simulated humans' steps together."""
    build_calls: float
    prompt_tokens: float
    completion_tokens: float

    @property
    def calls(self) -> float:
        return (self.ai_steps + self.human_steps) * (1 + REPAIR_SHARE) + self.build_calls


def session_model(spec: SessionSpec) -> SessionModel:
    """The per-role step model (see the module docstring): calls and mean prompt of `spec`."""
    settings, variant = spec.settings, spec.variant
    humans = len(variant.humans)
    rounds = min(settings.action_budget * AI_BUDGET_SHARE, settings.max_rounds)
    ai = rounds if variant.ai else 0.0  # a solo variant: its human holds the AI's clock
    human_cap = settings.budget_for("human" if variant.ai else "ai")
    per_human = min(human_cap if settings.per_member else human_cap / max(humans, 1), rounds)
    human = humans * per_human
    if settings.team_action_budget:
        scale = min(1.0, settings.team_action_budget / max(ai + human, 1e-9))
        ai, human = ai * scale, human * scale
    build = (BUILD_CALLS_PER_MEMBER * len(variant.team) + 1) if variant.memory else 0
    steps = round(ai + human)
    cap = BASE_PROMPT_TOKENS + _profile_tokens(spec)
    prompts = [min(BASE_PROMPT_TOKENS + GROWTH_PER_STEP_TOKENS * s, cap) for s in range(max(steps, 1))]
    return SessionModel(ai_steps=ai, human_steps=human, build_calls=build, prompt_tokens=sum(prompts) / len(prompts),
                        completion_tokens=COMPLETION_TOKENS)


def _profile_tokens(spec: SessionSpec) -> float:
    """The most the observation profile shows of the growing parts (notebook, chat, activity, editor)."""
    p = spec.profile
    chars = [p.notebook_chars, p.chat_chars, p.activity_chars, p.editor_chars, p.memory_chars]
    if any(c is None for c in chars[:2]):
        return float("inf")  # the full profile: the prompt grows with the session
    return sum(c or 0 for c in chars) / CHARS_PER_TOKEN


def judge_questions(spec: SessionSpec, metrics: Iterable[str], repeats: int) -> float:
    """Judge requests for one session: per judged metric, times the repeats."""
    team = bool(spec.variant.humans)
    return repeats * sum(JUDGE_QUESTIONS.get(m, 0) for m in metrics if team or m not in TEAM_ONLY)


def assumptions() -> list[str]:
    """One line per assumption of the model, as the dry run prints them."""
    return [
        f"AI steps: {AI_BUDGET_SHARE:.0%} of its action budget (its budget is the session clock; a finish is "
        "the model's choice), rounds at most max_rounds",
        "each simulated human: one step per round while the AI acts, up to its own cap; none after the AI's last",
        f"repairs: {REPAIR_SHARE:.0%} more requests per step (malformed answers)",
        f"memory build: {BUILD_CALLS_PER_MEMBER} calls per team member + 1 (memory variants only)",
        f"prompt: {BASE_PROMPT_TOKENS:,} tokens + {GROWTH_PER_STEP_TOKENS} per earlier step, up to what the "
        f"observation profile shows; {COMPLETION_TOKENS} completion tokens per call",
        "judge: " + ", ".join(f"{m} {n:g}" for m, n in JUDGE_QUESTIONS.items()) +
        f" requests per session and repeat (initiative, gates, a_profile: teams only), {JUDGE_PROMPT_TOKENS} + "
        f"{JUDGE_COMPLETION_TOKENS} tokens each",
        f"provider cache: {CACHED_SHARE:.0%} of session prompt tokens at the cache rate where the provider has one; "
        "none for the judge",
    ]


# --- measured figures: stored after a batch, read by the next estimate ---------------------------

class Measured(BaseModel):
    """What the sessions of one variant and settings did, per session, as a batch measured it."""

    key: str
    sessions: int
    calls: float
    prompt_tokens: float
    """Per call."""
    completion_tokens: float
    cached_share: float
    cost: float
    """Per session, USD paid (0 when only replays were seen)."""
    seconds_per_call: float | None = None
    """Mean latency of a paid call in the sessions' logs (None: none logged, or an older line);
    the dry run's wall-clock estimate reads it (`runner.wallclock`)."""


def settings_key(spec: SessionSpec) -> str:
    """What decides a session's calls apart from task and seed: variant, settings, models, profile."""
    return sha256_hex({"variant": spec.variant.model_dump(mode="json"), "settings": spec.settings.model_dump(mode="json"),
                       "models": {k: v.output_identity() for k, v in sorted(spec.models.items())},
                       "profile": spec.profile.name})[:16]


def judge_key(model: str, metrics: Iterable[str], repeats: int, variant: str) -> str:
    return sha256_hex({"judge": model, "metrics": sorted(metrics), "repeats": repeats, "variant": variant})[:16]


def read_measured(results: Path) -> dict[str, Measured]:
    """The latest measured figures per key in `<results>/calibration.jsonl` (empty if none)."""
    path = results / CALIBRATION
    found: dict[str, Measured] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = Measured.model_validate_json(line)
            except ValueError:
                continue
            found[entry.key] = entry
    return found


def record_measured(results: Path, entries: Iterable[Measured], comparison: dict) -> None:
    """Append measured figures and the run's estimate-against-actual to `<results>/calibration.jsonl`
    (the comparison as one line of its own, `{"comparison": ...}`)."""
    lines = [e.model_dump_json() for e in entries]
    lines.append(json.dumps({"comparison": comparison, "time": time.time()}))
    results.mkdir(parents=True, exist_ok=True)
    with open(results / CALIBRATION, "a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
