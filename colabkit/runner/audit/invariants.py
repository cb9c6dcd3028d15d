"""The invariants every scenario's runs must keep, whatever the policies do.

Each check reads one scenario's runs (one per variant, `player.Run`) and returns the
violations found (`Violation`: the invariant, the variants involved, what was seen). The
invariants (named as the audit prints them):

- `ai-opportunity`: under the AI's clock ("ai_budget"), the AI takes exactly its budget in
  turns unless its own finish takes effect first (then the session ends there: an AI that
  finishes at its k-th turn takes k); nothing but
  the AI's budget, its finish or an infrastructure end (cost cap, provider refusal, crash)
  ends a session, and no human takes a turn after the AI's last; and no run crashes (the
  audit's double never refuses, so an "error" or "provider_error" end is the engine's).
- `nothing-lost`: no request or memory update is still open at any end but a crash or a
  provider refusal, unless the engine asked its signatory in the closing pass and that step
  failed (a malformed or impossible answer: the member's failure, recorded as such).
- `gates-transparent`: when every member approves every request (in any order, or at the end) and only the
  AI edits, a gated variant submits what its ungated twin submits (the same seats, personas and
  memory without gates, `gate_twin`: Scaffolded and Memory-only, Preassigned and Default; a variant
  with plugin structures that add no action and its twin without them, `plugin_twin`), whoever
  signs (a decision is never a member's turn).
- `same-capacity`: a human seat's steps available (its first prompt's "actions left") are the
  same in every variant that has it, and it never takes more turns than that; a seat never
  offered a step in a session the AI's budget ended (without a team cap) has lost its steps
  (round 1 asks every member with steps).
- `same-turn-order`: within a round, any two members who both take a turn do so in the same
  order in every variant with the same team (the order is drawn from seed, round and team).
- `prompts-as-sent`: each step's answer schema lists only what the member may do now (no
  approve/reject without a request shown to it, no id not shown, no action its prompt does not
  list); beyond its action enums the schema is the same for every member of every variant;
  the sampling parameters are a role's own, the same in every variant; max_tokens is a
  function of the schema; a repair prompt is the same wherever the same answer is repaired
  under the same choices (the validation error names the actions on offer).

`same-rendering` (what the variants show for the same history) is `probe`'s; `check_all` also
holds each run on its own to the documented rules (`conduct.CONDUCT`: who is asked when, what
each member is shown, each step as answered, one repair, each structure in force).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from colabkit.runner.audit.conduct import CONDUCT, check_conduct
from colabkit.runner.audit.player import Run, open_requests, schema_of
from colabkit.runner.audit.scenario import Scenario
from colabkit.runner.audit.violation import Violation
from colabkit.session.actions import MEMORY_UPDATE
from colabkit.session.events import SYSTEM, Event
from colabkit.session.structure.registry import plugin_structures
from colabkit.session.totals import closing_step
from colabkit.team import VariantConfig

INVARIANTS = ("ai-opportunity", "nothing-lost", "gates-transparent", "same-capacity", "same-turn-order",
              "prompts-as-sent", "same-rendering", "same-trace", *CONDUCT)
INFRA_ENDS = ("llm_budget", "provider_error", "error")
"""Ends that are not the team's: the cost cap, a provider's refusal, a crash."""
LOST_OK = ("provider_error", "error")
"""The ends after which an open request may stay open (nobody can be asked any more)."""
STRUCTURAL_ACTIONS = {"send_message": "a team's members message each other",
                      "wait": "a team's member may wait for the others",
                      "approve": "a request is shown to the member", "reject": "a request is shown to the member",
                      "propose_memory_update": "the memory lives (Dynamic)"}
"""The only actions a schema may list or not by variant, each with the reason it may."""
_NOW = re.compile(r"^# Now \(round \d+, (\d+) actions? left for ([^;)]+)", re.M)
_SLOTS = {"expertise", "responsibility", "plan", "evidence_standards", "gates"}
"""A living memory's slots: what `to` names for a memory update (Dynamic)."""
_REQUEST_ID = re.compile(r"(?:req|upd)-\d+")
_VALID = re.compile(r"^# Valid actions\n(.*?)(?=\n\n# |\Z)", re.S | re.M)
_VOLATILE = ("metadata", "timeout", "api_base", "response_format", "max_tokens")


def turns(run: Run, pid: str) -> list[Event]:
    """`pid`'s own task steps (`Event.kind` "step", each with its model call): never a decision
    step or the closing pass's (machinery)."""
    return [e for e in run.events if e.participant == pid and e.llm_calls and e.kind == "step"]


def check_all(scenario: Scenario, runs: Sequence[Run], termination: str) -> list[Violation]:
    """Every invariant of this module over one scenario's runs (see the module docstring)."""
    found: list[Violation] = []
    for run in runs:
        if run.result.ended_by in LOST_OK:  # the audit's double never refuses: a crash is the engine's
            found.append(Violation("ai-opportunity", (run.variant,), f"the session ended by {run.result.ended_by}: "
                                   + _crash(run)))
        if termination == "ai_budget":
            found += ai_opportunity(scenario, run)
        found += nothing_lost(run)
        found += check_conduct(run)
    found += gates_transparent(scenario, runs)
    if termination == "ai_budget":
        found += same_capacity(runs)
    found += same_turn_order(runs)
    found += prompts_as_sent(runs)
    return found


def ai_opportunity(scenario: Scenario, run: Run) -> list[Violation]:
    ended = run.result.ended_by
    if ended in INFRA_ENDS:
        return []
    ai = turns(run, "ai")
    out = []
    finish = next((e for e in run.events if e.phase == "task" and e.action == "finish" and e.status == "ok"), None)

    def bad(text: str) -> None:
        out.append(Violation("ai-opportunity", (run.variant,), text))

    if ended == "finish":
        if finish is None or finish.participant != "ai":
            who = finish.participant if finish is not None else "nobody"
            bad(f"ended by {who}'s finish with the AI at {len(ai)} of {scenario.budget} turns")
        elif finish.signatory is None and (not ai or ai[-1].seq != finish.seq):  # finished at its k-th turn: took k
            bad(f"the AI's finish took effect at {finish.seq} but its last turn was {ai[-1].seq if ai else None}")
    elif len(ai) != scenario.budget or ended != "budget":
        bad(f"ended by {ended} with the AI at {len(ai)} of {scenario.budget} turns")
    if len(ai) > scenario.budget:
        bad(f"the AI took {len(ai)} turns on a budget of {scenario.budget}")
    last = ai[-1].seq if ai else -1
    after = [e for pid in run.spec.variant.humans for e in turns(run, pid) if e.seq > last]
    if after and ended != "finish":  # (a signatory's turn may bring the AI's held finish into effect)
        bad(f"{len(after)} human turn(s) after the AI's last ({', '.join(f'{e.participant} {e.action}' for e in after[:4])})")
    return out


def nothing_lost(run: Run) -> list[Violation]:
    if run.result.ended_by in LOST_OK:
        return []
    failed = {e.participant for e in run.events if closing_step(e) and e.status == "failed_step"}
    lost = [e for e in run.events if e.participant == SYSTEM and e.action == "request_expired"
            and not (e.signatory in failed or (e.args.get("action") == MEMORY_UPDATE and failed))]
    if not lost:
        return []
    what = ", ".join(f"{e.request_id} ({e.args.get('action')} by {e.proposer})" for e in lost)
    return [Violation("nothing-lost", (run.variant,), f"ended by {run.result.ended_by} with {what} still open")]


def gates_transparent(scenario: Scenario, runs: Sequence[Run]) -> list[Violation]:
    ai_moves = scenario.policy("ai").moves
    after_finish = ai_moves[ai_moves.index("finish"):] if "finish" in ai_moves else ()
    humans_edit = any(m.split(":")[0] in ("edit", "finish", "update") for r in scenario.seats[1:]
                      for m in scenario.policy(r).moves)
    if not scenario.approving() or humans_edit or scenario.cost_cap or any(m.startswith("edit") for m in after_finish):
        return []
    pairs = [(run, next((r for r in runs if is_gate_twin(r.spec.variant, run.spec.variant)), None))
             for run in runs if gate_twin(run.spec.variant) is not None]
    pairs += [(run, plugin_twin(run, runs)) for run in runs if run.spec.variant.structures]
    out = []
    for run, other in pairs:
        if other is None:
            continue
        if run.result.final_hypothesis != other.result.final_hypothesis:
            out.append(Violation("gates-transparent", (other.variant, run.variant), (
                f"everyone approves, yet {other.variant} submits {_short(other.result.final_hypothesis)} and "
                f"{run.variant} {_short(run.result.final_hypothesis)} (ended by {other.result.ended_by} / "
                f"{run.result.ended_by})")))
    return out


def gate_twin(variant: VariantConfig) -> dict[str, Any] | None:
    """What a gated variant's ungated twin is (its dump without the name): the same seats,
    personas and memory, no gates (Scaffolded and Memory-only, Preassigned and Default, for any
    team); None for a variant that is not gated, has a living memory or plays plugins."""
    if variant.gate_source == "none" or variant.memory_updates or variant.structures:
        return None
    return variant.model_copy(update={"gate_source": "none", "preassigned": None}).model_dump(exclude={"name"})


def is_gate_twin(candidate: VariantConfig, variant: VariantConfig) -> bool:
    """Whether `candidate` is `variant`'s ungated twin (`gate_twin`)."""
    twin = gate_twin(variant)
    return twin is not None and candidate.model_dump(exclude={"name"}) == twin


def plugin_twin(run: Run, runs: Sequence[Run]) -> Run | None:
    """The run of `run`'s twin without its plugin structures (same team and study structures), when
    its plugins add no action (only sections and holds: with everyone approving, nothing else)."""
    variant = run.spec.variant
    if any(s.actions for s in plugin_structures(variant)):
        return None
    same = variant.model_copy(update={"structures": (), "name": ""}).model_dump(exclude={"name"})
    return next((r for r in runs if not r.spec.variant.structures
                 and r.spec.variant.model_dump(exclude={"name"}) == same), None)


def same_capacity(runs: Sequence[Run]) -> list[Violation]:
    out = []
    seats: dict[str, dict[str, int]] = {}
    for run in runs:
        for pid in run.spec.variant.humans:
            nows = (_NOW.search(str(c["messages"][-1]["content"])) for c in run.calls if c["role"] == pid and _is_step(c))
            now = next((found for found in nows if found is not None), None)  # its first step not a closing one
            if now is None and run.result.ended_by == "budget" and run.spec.settings.team_action_budget is None:
                out.append(Violation("same-capacity", (run.variant,), f"{pid} is never offered a step, though "
                                     "round 1 asks every member with steps of its own"))
            if now is None:
                continue
            seats.setdefault(pid, {})[run.variant] = int(now.group(1))
            taken = [e for e in turns(run, pid) if e.action not in ("approve", "reject")]
            if len(taken) > int(now.group(1)):
                out.append(Violation("same-capacity", (run.variant,),
                                     f"{pid} took {len(taken)} turns with {now.group(1)} available"))
    for pid, caps in seats.items():
        for (a, ca), (b, cb) in combinations(caps.items(), 2):
            if ca != cb:
                out.append(Violation("same-capacity", (a, b), f"{pid}'s seat starts with {ca} steps in {a}, {cb} in {b}"))
    return out


def same_turn_order(runs: Sequence[Run]) -> list[Violation]:
    out = []
    for a, b in combinations(runs, 2):
        if a.spec.variant.team != b.spec.variant.team:
            continue
        oa, ob = _orders(a), _orders(b)
        for rnd in sorted(set(oa) & set(ob)):
            both = [p for p in oa[rnd] if p in ob[rnd]]
            if both != [p for p in ob[rnd] if p in oa[rnd]]:
                out.append(Violation("same-turn-order", (a.variant, b.variant),
                                     f"round {rnd}: {' '.join(oa[rnd])} in {a.variant}, {' '.join(ob[rnd])} in {b.variant}"))
                break
    return out


def prompts_as_sent(runs: Sequence[Run]) -> list[Violation]:
    out: list[Violation] = []
    frames: dict[str, tuple[str, str]] = {}  # the schema without its action enums -> (variant, role)
    params: dict[str, dict[str, tuple[str, str]]] = {}  # role -> its sampling parameters -> the first variant
    tokens: dict[str, tuple[Any, str]] = {}  # schema -> (max_tokens, variant)
    repairs: dict[tuple[str, str, str], tuple[str, str]] = {}  # (role, answer, choices) -> (repair, variant)
    for run in runs:
        seen_here: set[str] = set()
        for call in run.calls:
            role, messages = call["role"], call["messages"]
            name, schema = schema_of(call["params"])
            text = json.dumps(schema, sort_keys=True)
            sampling = json.dumps({k: v for k, v in call["params"].items() if k not in _VOLATILE},
                                  sort_keys=True, default=repr)
            first = params.setdefault(role, {}).setdefault(sampling, (run.variant, role))
            if len(params[role]) > 1 and sampling not in seen_here:
                out.append(Violation("prompts-as-sent", (first[0], run.variant),
                                     f"{role}'s sampling parameters differ: {sorted(params[role])}"))
            seen_here.add(sampling)
            prior = tokens.setdefault(text, (call["params"].get("max_tokens"), run.variant))
            if prior[0] != call["params"].get("max_tokens"):
                out.append(Violation("prompts-as-sent", (prior[1], run.variant),
                                     f"max_tokens {prior[0]} and {call['params'].get('max_tokens')} for one schema ({name})"))
            if len(messages) > 2:
                repair = "\n".join(f"{m['role']}: {m['content']}" for m in messages[2:])
                choices = json.dumps([_enum(schema.get("properties", {}).get(k, {}), schema) for k in ("action", "to")])
                key = (role, str(messages[2]["content"]), choices)  # the error names the choices on offer
                earlier = repairs.setdefault(key, (repair, run.variant))
                if earlier[0] != repair:
                    out.append(Violation("prompts-as-sent", (earlier[1], run.variant), f"{role}'s repair prompt differs"))
                continue
            if name != "StepSchema":
                continue
            frame = json.dumps(_without_enums(schema), sort_keys=True)
            if frame not in frames:
                frames[frame] = (run.variant, role)
                if len(frames) > 1:
                    other = next(iter(frames.values()))
                    out.append(Violation("prompts-as-sent", (other[0], run.variant),
                                         f"the step schema of {role} differs from {other[1]}'s beyond its action enums"))
            for text in _valid_now(run, role, schema, str(messages[-1]["content"])):
                if text not in seen_here:
                    seen_here.add(text)
                    out.append(Violation("prompts-as-sent", (run.variant,), f"{text} (first in round "
                                         f"{_round(str(messages[-1]['content']))})"))
    return _unique(out)


def _valid_now(run: Run, role: str, schema: dict[str, Any], observation: str) -> list[str]:
    """The schema's actions (and request ids) against what the prompt shows this member now."""
    props = schema.get("properties", {})
    actions = set(_enum(props.get("action", {}), schema))
    shown = open_requests(observation)
    listed = _VALID.search(observation)
    offered = {line[2:].split(":")[0] for line in (listed.group(1).splitlines() if listed else ()) if line.startswith("- ")}
    offered |= {"approve", "reject"} if shown else set()
    out = []
    if {"approve", "reject"} & actions and not shown:
        out.append(f"offers {', '.join(sorted({'approve', 'reject'} & actions))} with no request shown to {role}")
    ids = {v for v in _enum(props.get("to", {}), schema) if _REQUEST_ID.fullmatch(v)}
    if not ids <= set(shown):
        out.append(f"offers request ids {sorted(ids - set(shown))} not shown to {role}")
    recipients = {p for v in _enum(props.get("to", {}), schema) if not _REQUEST_ID.fullmatch(v)
                  for p in v.split(",")} - {"", "all"} - (_SLOTS if run.spec.variant.memory_updates else set())
    if not recipients <= set(run.spec.variant.team) - {role}:
        out.append(f"offers recipients {sorted(recipients)} beyond {role}'s teammates")
    extra = actions - offered - {"approve", "reject"}
    if listed and extra:
        out.append(f"offers {', '.join(sorted(extra))} that {role}'s prompt does not list")
    return out


def _enum(prop: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    if "enum" in prop:
        return [str(v) for v in prop["enum"]]
    if "const" in prop:
        return [str(prop["const"])]
    ref = prop.get("$ref") or next((p.get("$ref") for p in prop.get("allOf", []) + prop.get("anyOf", [])
                                    if isinstance(p, dict) and "$ref" in p), None)
    if isinstance(ref, str):
        target = schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {})
        return _enum(target, schema)
    return [v for p in prop.get("anyOf", []) if isinstance(p, dict) for v in _enum(p, schema)]


def _without_enums(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the action and `to` choices, `to`'s help and bound taken out: they follow
    the actions on offer (recipients where messages are, request ids where decisions are; an
    enum of choices bounds `to` instead of a maxLength)."""
    out = json.loads(json.dumps(schema))
    for key in ("action", "to"):
        prop = out.get("properties", {}).get(key)
        if isinstance(prop, dict):
            out["properties"][key] = {k: v for k, v in prop.items() if k in ("type", "title", "default")}
    out.pop("$defs", None)
    return out


def _is_step(call: dict[str, Any]) -> bool:
    return schema_of(call["params"])[0] == "StepSchema" and len(call["messages"]) <= 2


def _orders(run: Run) -> dict[int, list[str]]:
    orders: dict[int, list[str]] = {}
    for e in run.events:
        if e.llm_calls and e.kind == "step":
            seq = orders.setdefault(e.round, [])
            if e.participant not in seq:
                seq.append(e.participant)
    return orders


def _round(observation: str) -> str:
    found = re.search(r"^# Now \(round (\d+)", observation, re.M)
    return found.group(1) if found else "?"


def _crash(run: Run) -> str:
    end = next((e for e in reversed(run.events) if e.action == "session_end"), None)
    return str(end.args.get("error", end.result))[:300] if end is not None else "(no end logged)"


def _short(text: str) -> str:
    return repr(text[:40] + ("..." if len(text) > 40 else "")) if text else "nothing"


def _unique(found: list[Violation]) -> list[Violation]:
    return list(dict.fromkeys(found))
