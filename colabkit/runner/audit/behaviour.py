"""The behavioural audit: the variants run, not only rendered, and compared round by round.

The rendering audit (`render`) compares what every participant is first shown. Behaviour
can still differ later: how budgets are spent, who ends a session and when, which sections
appear once requests exist, what the gateway finally sends (the schema text of JSON mode,
a repair prompt, max_tokens, sampling). So `audit_behaviour` plays one scripted trajectory
(`double.TRAJECTORY`: the same answers per role in every variant, with a gated proposal in
the variants that gate, decisions, a failed cell, a malformed answer and its repair, a late
edit) through the engine's own loop and closing pass (`preview.rehearse`) and the real
`Gateway`, with `double.AuditScript` standing in for every role's model (each role keeps its
configured sampling settings; only the model string is the double's). The AI's budget is
`double.STEPS` (or the spec's own when smaller), the same change for every variant.

Every request as the double received it is split into named sections, keyed by the
participant's call number (`call 3: Result editor`), beside facts of the run (the AI's steps
available and used, how and by whose budget the session ended, each member's steps, model
calls, closing-pass decisions and expired requests). They are compared between variants
like the renderings (`render.compare_variants`), each under the causes `rule_for` allows;
the AI's steps, the end, the gateway's parameters and the repair prompt have no cause at
all, so they must be the same in every variant.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from colabkit.llm import Gateway, register_provider
from colabkit.llm.gateway import RetryPolicy
from colabkit.runner.audit.double import PROVIDER, STEPS, AuditScript
from colabkit.runner.audit.render import NO_CAUSE, RULES, AuditReport, Prompt, Rule, _prompt_sections, _rule
from colabkit.runner.audit.render import compare_variants as compare
from colabkit.session import SessionSpec
from colabkit.session.events import SYSTEM
from colabkit.session.prompting.preview import Rehearsal, rehearse
from colabkit.session.totals import EXPIRED_FIELDS, closing_step
from colabkit.tasks import Task

_LATER = "team gated living"  # what a later step may depend on: who is there, what is held, what lives
SECTION_RULES: dict[str, Rule] = {
    **{key.removeprefix("task: "): rule for key, rule in RULES.items() if key.startswith("task: ")},
    "Timeline": _rule(text=_LATER),  # "Code cells ... oldest first": what the team did
    "Activity": _rule(text=_LATER),
    "Result editor": _rule(text=_LATER),  # a held edit shows there later, or never
    "Approval requests for you": _rule(presence="gated team", text="gated team"),
    "Your requests": _rule(presence="gated team", text="gated team"),
    "Memory updates for you": _rule(presence="living", text="living team"),
    "Your memory updates": _rule(presence="living", text="living team"),
    "Your recent thoughts": _rule(text=_LATER),
    "Your last step": _rule(presence=_LATER, text=_LATER),
    "Now": _rule(text=_LATER),  # the round a member's k-th call falls in; a spent or closing step
    # JSON mode's schema text lists the actions on offer: a memory update where the memory lives,
    # no message for the single agent, decisions (the open ids their enum) only with a request
    # open; likewise the schema sent, max_tokens sized from it
    "schema": _rule(text="team gated living"),
    "gateway params": _rule(text="team gated living"),
    "repair": Rule(),
}
FACT_RULES: dict[str, Rule] = {
    "behaviour: model calls (human)": _rule(text=_LATER),
    "behaviour: steps (human)": _rule(text=_LATER),
    "behaviour: steps (ai)": _rule(text="gated team"),  # a held step is "pending" (who signs what: the team); how many: `AI steps`
    "behaviour: closing pass": _rule(presence=_LATER, text=_LATER),
    "behaviour: expired requests": _rule(text=_LATER),
}
"""Facts not listed (the AI's steps and model calls, the end, the submitted hypothesis) have no
allowed cause: with the closing pass a gated last edit is submitted as an ungated one is."""
RULE_FACTS: dict[str, dict[str, Rule]] = {"all_sides": {"behaviour: end": _rule(text=_LATER)}}
"""Facts a termination rule lets the design change: under "all_sides" a team's session runs
past the AI's budget until its humans are spent (or idle), so when it ends depends on who is
there, by that rule's design (the AI's steps still may not differ)."""
_VOLATILE_PARAMS = ("metadata", "timeout", "api_base")


def rule_for(key: str, pid: str, termination: str = "ai_budget") -> Rule:
    """The causes allowed to change section `key` of participant `pid`'s run under `termination`."""
    if not key.startswith("call "):
        return {**FACT_RULES, **RULE_FACTS.get(termination, {})}.get(key, NO_CAUSE)
    name = key.split(": ", 1)[1]
    if name.startswith("Code cells"):
        name = "Timeline"
    rule = SECTION_RULES.get(name, NO_CAUSE)
    if pid != "ai":  # a member's k-th call exists or not by who is there and what it is asked to decide
        rule = Rule(rule.presence | set(_LATER.split()), rule.text)
    return rule


def rehearsal_spec(spec: SessionSpec) -> SessionSpec:
    """`spec` with the double as every role's model and the AI's budget at most `STEPS`."""
    models = {role: spec.model_for(role).model_copy(update={"model": f"{PROVIDER}/{role}"})
              for role in spec.variant.team}
    settings = spec.settings.model_copy(update={"action_budget": min(spec.settings.action_budget, STEPS)})
    return spec.model_copy(update={"models": models, "settings": settings})


async def _play(spec: SessionSpec, task: Task) -> tuple[Rehearsal, list[dict[str, Any]]]:
    double = AuditScript()
    register_provider(PROVIDER, double)
    gateway = Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0.0, max_delay_s=0.0))
    try:
        rehearsal = await rehearse(rehearsal_spec(spec), task, gateway)
    finally:
        gateway.close()
    return rehearsal, double.calls


def call_sections(k: int, call: dict[str, Any]) -> dict[str, str]:
    """One request as named sections: the system prompt's paragraphs (JSON mode's schema text
    as `schema`), the observation's sections, a repair exchange, the parameters sent."""
    messages = call["messages"]
    system = str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""
    persona, marker, schema = system.partition("\n\nAnswer with a single JSON object")
    user = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
    out = _prompt_sections(Prompt(f"call {k}", persona, user))
    if marker:
        out[f"call {k}: schema"] = marker.strip() + schema
    later = messages[messages.index(next(m for m in messages if m["role"] == "user")) + 1:] if user else []
    if later:
        out[f"call {k}: repair"] = "\n".join(f"{m['role']}: {m['content']}" for m in later)
    params = {key: value for key, value in call["params"].items() if key not in _VOLATILE_PARAMS}
    out[f"call {k}: gateway params"] = json.dumps(params, sort_keys=True, default=repr)
    return out


def run_sections(spec: SessionSpec, rehearsal: Rehearsal, calls: Sequence[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Per participant: every request's sections and the facts of the run."""
    out: dict[str, dict[str, str]] = {pid: {} for pid in spec.variant.team}
    for pid in out:
        mine = [c for c in calls if c["role"] == pid]
        for k, call in enumerate(mine, 1):
            out[pid].update(call_sections(k, call))
        side = "ai" if pid == "ai" else "human"
        steps = [e for e in rehearsal.events if e.phase == "task" and e.participant == pid
                 and e.proposer != pid and e.action != "wait" and not closing_step(e)]
        out[pid][f"behaviour: model calls ({side})"] = str(len(mine))
        out[pid][f"behaviour: steps ({side})"] = ", ".join(f"{e.action} {e.status}" for e in steps)
        closing = [f"{e.action} {e.status}" for e in rehearsal.events if e.participant == pid and closing_step(e)]
        if closing:
            out[pid]["behaviour: closing pass"] = ", ".join(closing)
    totals = rehearsal.totals
    out["ai"]["behaviour: AI steps"] = f"{totals.ai_actions} used of {totals.ai_budget}"
    out["ai"]["behaviour: end"] = (f"ended by {rehearsal.ended_by}" + (f" ({rehearsal.budget_side}'s budget)"
                                   if rehearsal.budget_side else "") + f" after round {totals.rounds}")
    out["ai"]["behaviour: expired requests"] = ", ".join(
        f"{name} {getattr(totals, f'expired_{name}')}" for name in EXPIRED_FIELDS)
    ends = [e for e in rehearsal.events if e.participant == SYSTEM and e.action == "session_end"]
    out["ai"]["behaviour: final hypothesis"] = str(ends[-1].args.get("final_hypothesis", "")) if ends else ""
    return out


def audit_behaviour(specs: Sequence[SessionSpec], task: Task) -> AuditReport:
    """Play the scripted trajectory in every spec's variant and compare the runs (module docstring)."""
    async def play_all() -> dict[str, dict[str, dict[str, str]]]:
        runs = {}
        for spec in specs:  # one after another: the double is one provider registration at a time
            rehearsal, calls = await _play(spec, task)
            runs[spec.variant.name] = run_sections(spec, rehearsal, calls)
        return runs

    rules = {spec.settings.termination for spec in specs}  # one arm: the same settings for every spec
    termination = rules.pop() if len(rules) == 1 else "ai_budget"
    return compare(specs, asyncio.run(play_all()), lambda key, pid: rule_for(key, pid, termination))
