"""`same-trace`: a variant and its Default twin, played by the same policy, leave the same whole
trace once the structure's declared parts are projected out (noninterference, issue 42).

A run's **trace** (`trace_of`) is everything observable, per channel:

- `requests`: every request each seat sent, as it left for the provider (`player.Run.calls`:
  the messages, the sampling parameters, the answer schema and `max_tokens`), in order;
- `turns`: each seat's task-phase turns in order (round, action, its arguments, status);
- `kernel`: every notebook call (author, code, status, output), in order;
- `charges`: every charge against the spending cap (caller and tokens), in order;
- `end`: the final answer and `ended_by`;
- `metrics`: every metric the suite computes without a judge (`scorer.Scorer.uses_judge`).

The **projection** (`projection`) is read mechanically from the two variants' compositions
(`declared`: `Structure.sections`, `actions`, `holds`, `builds` and whether a
structure decides requests of its own), never from a list kept by hand: the build phase's
requests, turns and charges; the structure's sections of every prompt; the lines, enum values
and `to` choices naming its actions, decisions and request ids; the turns taken to
decide or to play its actions. What its holds change is the timing of the held action's
effect, so where a hold fired the shared channels (the notebook, the chat, the editor, the
answer, the metrics) are compared at the end, and the prompts' shared sections only before
the first hold; a held action that was never applied (rejected, expired) matches anything. A
held finish ended the twin where it was proposed: the channels compare up to it.
Everything else must be equal: a difference is printed as the first element that differs,
channel by channel (`diff`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from colabkit.hashing import sha256_hex
from colabkit.runner.audit.player import Run
from colabkit.runner.audit.projection import (
    DECISIONS,
    Declared,
    answer_action,
    declared,
    project_choices,
    project_prompt,
    project_schema,
)
from colabkit.runner.audit.rules import RULES
from colabkit.runner.audit.violation import Violation
from colabkit.runner.batch import run_sync
from colabkit.session.actions import valid_actions
from colabkit.session.events import DECISION_STEP, SYSTEM, Event
from colabkit.session.structure.registry import structures_for
from colabkit.session.totals import closing_step
from colabkit.team import VariantConfig

_NOT_SAMPLING = ("metadata", "timeout", "api_base", "api_key", "response_format", "max_tokens")
"""Request parameters that are not sampling: where it is sent, the schema (compared on its own) and
`max_tokens`, a function of the whole schema, structure enums included (`prompts-as-sent` checks it)."""


@dataclass
class Trace:
    """One run's observable channels (see the module docstring), each a list of canonical lines."""

    variant: str
    channels: dict[str, list[str]] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    """Per channel, how many of its entries came before the first hold (a request after it is
    compared without the shared sections, a wait after it not at all)."""
    held: bool = False
    """Whether a hold fired (a `pending` event): shared channels then compare at the end only."""
    unapplied: bool = False
    """Whether a held action never took effect (rejected or expired)."""
    until: dict[str, int] | None = None
    """Per channel, the entries up to a held finish's proposal: where a finish was held, the
    Default twin ended there, so what came after is the hold's (its channels compare up to it)."""


def trace_of(run: Run, dec: Declared, metrics: dict[str, Any] | None = None, like: Trace | None = None,
             teammates: tuple[str, ...] = ()) -> Trace:
    """`run`'s trace projected by `dec` (the union of both twins' declared parts); `like`: the
    variant's trace, whose holds say where the twin's shared channels are compared too. With
    `teammates` (a team's run beside the single agent's) their first step but a wait is where
    the shared channels part, for good."""
    trace = Trace(run.variant)
    events = run.events
    applied: dict[str, str] = {e.request_id: e.status for e in events if e.request_id and e.proposer and e.status not in
               ("pending", "approved", "rejected") and e.participant == e.proposer}

    def parts(e: Event) -> bool:
        if teammates:
            return e.phase == "task" and e.participant in teammates and e.action != "wait" and bool(e.llm_calls)
        return e.status == "pending"
    trace.held = any(parts(e) for e in events) if like is None else like.held
    trace.unapplied = (any(e.status == "pending" and e.request_id not in applied for e in events)
                       or (trace.held and bool(teammates))) if like is None else like.unapplied
    first_hold = min((e.seq for e in events if parts(e)), default=None)
    ch = trace.channels
    at: dict[str, list[int | None]] = {}  # per channel, the seq of each entry's event
    waited: dict[str, set[int]] = {}  # per channel, the entries that were waits

    def add(channel: str, text: str, seq: int | None, wait: bool) -> None:
        entries = ch.setdefault(channel, [])
        if wait:
            waited.setdefault(channel, set()).add(len(entries))
        entries.append(text)
        at.setdefault(channel, []).append(seq)

    # a structure's own act, or the same move in its twin (a failed step: the action is not on offer
    # there), spends its member's step and is nobody's news: both are one "declared act" turn
    declared_acts = {seq for call, (_, seq, _, _) in zip(run.calls, _call_times(run))
                     if seq is not None and answer_action(call.get("answer", "")) in dec.actions}
    # turns: each seat's steps, the structure's turns (decisions, its actions, the build) left out
    for e in events:
        if e.phase != "task" or e.participant == SYSTEM or not e.llm_calls or closing_step(e):
            continue
        if e.seq in declared_acts:
            add(f"turns {e.participant}", f"round {e.round}: a declared act", e.seq, False)
            continue
        if e.action in dec.own_actions or (dec.decides and _deciding(e)):
            continue
        status: str = e.status
        if status == "pending":  # held: as it was applied; never applied (the structure's decision): anything
            status = applied.get(e.request_id or "", "*")
        args = json.dumps({k: v for k, v in e.args.items() if k in ("content", "to", "code", "text")}, sort_keys=True)
        add(f"turns {e.participant}", f"round {e.round}: {e.action} {status} {_digest(args)}", e.seq, e.action == "wait")
    # requests as sent: what the seat's model was asked, the structure's parts projected out
    for call, (phase, event_seq, closing, deciding) in zip(run.calls, _call_times(run)):
        answer = answer_action(call.get("answer", ""))
        if ((dec.builds and phase == "build") or closing or answer in dec.own_actions or (dec.decides and deciding)
                or event_seq in declared_acts):
            continue  # the build, the closing pass, a decision step or the structure's action: its turns
        channel = f"requests {call['role']}"
        n = len(ch.get(channel, []))
        before = first_hold is not None and event_seq is not None and event_seq < first_hold
        shared = not trace.held or (before if like is None else n < like.cut.get(channel, 0))
        messages = [str(m.get("content", "")) if m.get("role") == "system" else
                    project_prompt(str(m.get("content", "")), dec, shared) if k == 1
                    else project_choices(str(m.get("content", "")), dec)
                    for k, m in enumerate(call["messages"])]
        sampling = {k: v for k, v in call["params"].items() if k not in _NOT_SAMPLING}
        add(channel, "\n".join([f"params {json.dumps(sampling, sort_keys=True, default=repr)}",
                                f"schema {project_schema(call['params'], dec)}",
                                *(f"{m['role']}: {text}" for m, text in zip(call["messages"], messages))]),
            event_seq, answer == "wait")
    # charges against the cap: the task's only (the build phase, decision steps and the closing pass,
    # a failed closing step included, are the structure's machinery, charged apart)
    for e in events:
        if ((dec.builds and e.phase == "build") or e.action in dec.own_actions or (dec.decides and _deciding(e))
                or e.seq in declared_acts or closing_step(e)):
            continue
        for c in e.llm_calls:
            add(f"charges {e.participant}", f"round {e.round}: {c.total_tokens} tokens", e.seq, e.action == "wait")
    if trace.held:  # a wait after a hold (or a teammate's act): asked or not as effects land (news)
        if like is None:
            trace.cut = {k: sum(1 for q in seqs if q is not None and first_hold is not None and q < first_hold)
                         for k, seqs in at.items()}
        cuts = trace.cut if like is None else like.cut
        for channel, wait_at in waited.items():
            cut = cuts.get(channel, 0)
            ch[channel] = [text for i, text in enumerate(ch[channel]) if i < cut or i not in wait_at]
    held_finish = min((e.seq for e in events if e.status == "pending" and e.action == "finish"), default=None)
    if like is None and held_finish is not None:
        trace.until = {k: sum(1 for q in seqs if q is not None and q <= held_finish) for k, seqs in at.items()}
        trace.unapplied = True
    until = trace.until if like is None else like.until
    if until is not None:
        for channel in ch:
            ch[channel] = ch[channel][:until.get(channel, 0)]
    ch["end"] = [f"ended_by {run.result.ended_by}"] if until is None else []
    if not trace.unapplied:  # shared channels: equal once every held action took effect
        cells = [f"{c.author}: {c.status} {c.code!r} -> {c.output[:200]!r}" for c in run.result.snapshot.cells]
        ch["kernel"] = sorted(cells) if trace.held else cells
        ch["end"].append(f"answer {run.result.final_hypothesis!r}")
        ch["metrics"] = [f"{k} = {v!r}" for k, v in sorted((metrics or {}).items())]
    return trace


def _digest(text: str) -> str:
    return text if len(text) <= 120 else f"{text[:100]}... ({sha256_hex(text)[:8]})"


def _deciding(event: Event) -> bool:
    """A decision (approve/reject) or any step of a decision step (its wait, its failed answer):
    turns that exist only where a structure holds requests (`Event.kind` machinery)."""
    return (event.decision is not None and event.action in DECISIONS) or bool(event.args.get(DECISION_STEP))


def _call_times(run: Run) -> list[tuple[str, int | None, bool, bool]]:
    """For each request in `run.calls`, the phase and seq of the event that carried it, whether it
    was a closing-pass step and whether a decision step (`Run.calls_by_event`)."""
    return [("task", None, False, False) if e is None else (e.phase, e.seq, closing_step(e), _deciding(e))
            for e, _ in run.calls_by_event()]


def metric_values(run: Run) -> dict[str, Any]:
    """Every metric a run can compute without a judge, by column (an error is a value too), but
    the columns a metric declares to count machinery by design (`Scorer.machinery_columns`)."""
    from colabkit.evaluation.scorer import SessionContext, registered
    from colabkit.store import SessionRecord

    now = datetime.now(UTC)
    record = SessionRecord.from_result(run.result, started=now, finished=now)
    ctx = SessionContext(folder=Path("."), record=record, events=run.events,
                         snapshot_source=lambda: run.result.snapshot, task=None, gold=None, judge=None)
    out: dict[str, Any] = {}
    for name, factory in sorted(registered().items()):
        scorer = factory()
        if scorer.uses_judge:
            continue
        try:
            out.update({f"{name}.{k}": v for k, v in run_sync(partial(scorer.score, ctx)).values.items()
                        if k not in scorer.machinery_columns})
        except Exception as exc:  # a scorer that cannot read a run: the same on both sides, or a finding
            out[name] = f"error: {type(exc).__name__}"
    return out


def diff(a: Trace, b: Trace) -> list[str]:
    """The first element that differs in each channel both traces have ('*' matches anything)."""
    out = []
    for name in sorted(set(a.channels) & set(b.channels)):
        la, lb = a.channels[name], b.channels[name]
        for k in range(max(len(la), len(lb))):
            x, y = (la[k] if k < len(la) else None), (lb[k] if k < len(lb) else None)
            if x == y or (x is not None and y is not None and _wild_equal(x, y)):
                continue
            out.append(f"{name} #{k + 1}: {_first_line_diff(x, y, a.variant, b.variant)}")
            break
    return out


def _wild_equal(x: str, y: str) -> bool:
    px, py = x.split(" "), y.split(" ")
    return len(px) == len(py) and all(u == v or "*" in (u, v) for u, v in zip(px, py)) and x.startswith("round ")


def _first_line_diff(x: str | None, y: str | None, va: str, vb: str) -> str:
    if x is None or y is None:
        return f"only {vb if x is None else va} has {_short((y if x is None else x) or '')}"
    title = ""
    for p, q in zip(x.splitlines(), y.splitlines()):
        title = p[2:].split(" (")[0] if p.startswith("# ") else title
        if p != q and p.startswith("schema ") and q.startswith("schema "):
            path, u, v = _json_diff(json.loads(p.split(" ", 2)[2]), json.loads(q.split(" ", 2)[2]))
            return f" (the schema at {path})\n      {va}: {_short(json.dumps(u))}\n      {vb}: {_short(json.dumps(v))}"
        if p != q:
            where = f" (in section {title!r})" if title else ""
            return f"{where}\n      {va}: {_short(p)}\n      {vb}: {_short(q)}"
    lx, ly = x.splitlines(), y.splitlines()
    rest = lx[len(ly):] or ly[len(lx):]
    return f"{len(lx)} lines in {va}, {len(ly)} in {vb}: {_short(rest[0] if rest else '')}"


def _json_diff(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """The first path at which two JSON values differ, and the values there."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, _MISSING) != b.get(key, _MISSING):
                return _json_diff(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}/{key}")
    return path or "/", a, b


_MISSING = "(absent)"


def _short(text: str) -> str:
    return repr(text if len(text) <= 160 else text[:150] + "...")


def default_twin(variant: VariantConfig, candidates: Sequence[VariantConfig]) -> VariantConfig | None:
    """`variant`'s Default twin among `candidates`: the same seats and personas, no structure."""
    if not structures_for(variant):
        return None
    personas = [(p.id, p.prompt) for p in variant.team_personas()]
    return next((c for c in candidates if not structures_for(c) and c.humans == variant.humans
                 and [(p.id, p.prompt) for p in c.team_personas()] == personas), None)


def composition_declared(team: tuple[str, ...], clock: bool) -> Declared:
    """What a team adds to the single agent's prompts: the sections the rendering audit lets the
    team change (`rules.RULES`, cause "team"), the actions the engine offers a team's AI and not
    a lone one (`actions.valid_actions`) and, with messages, their recipients (`to`)."""
    sections = {key.partition(": ")[2] for key, rule in RULES.items()
                if key.startswith("task: ") and "team" in rule.presence | rule.text}
    added = set(valid_actions("ai", team, has_requests=False, clock=clock)) - set(
        valid_actions("ai", ("ai",), has_requests=False, clock=clock))
    return Declared(sections=frozenset(sections - {"Valid actions"}), actions=frozenset(added),
                    fields=frozenset({"to"}) if "send_message" in added else frozenset())


def team_vs_single(runs: Sequence[Run]) -> list[Violation]:
    """Each team Default's AI against the single agent, on the parts their prompts share: the AI's
    requests, turns and charges and how the session ended (the shared sections until a teammate
    does something but wait); under the study's clock ("ai_budget") only, where the AI's budget
    alone ends a session whatever the team (or the spending cap, which the team shares)."""
    single = next((r for r in runs if not r.spec.variant.humans), None)
    if single is None or single.spec.settings.termination != "ai_budget":
        return []  # under the Co-Gym rules the composition decides the end (a team may end idle)
    out = []
    for run in runs:
        variant = run.spec.variant
        if not variant.humans or structures_for(variant):
            continue
        dec = composition_declared(variant.team, run.spec.settings.termination == "ai_budget")
        tb = trace_of(run, dec, teammates=variant.humans)
        ta = trace_of(single, dec, like=tb)
        # the AI's first action a lone agent has not (a message): the two part there for good
        added = next((e.seq for e in run.events if e.participant == "ai" and e.action in dec.actions), None)
        before = [e for e in run.events if e.participant == "ai" and e.phase == "task" and e.llm_calls
                  and (added is None or e.seq < added)]
        upto = {"requests ai": sum(len(e.llm_calls) for e in before), "turns ai": len(before),
                "charges ai": sum(len(e.llm_calls) for e in before)}
        # a spending cap is the team's to share: its teammates' calls reach it sooner, so where it
        # ended either run the AI's channels compare up to the shorter (the composition's cost)
        capped = "llm_budget" in (single.result.ended_by, run.result.ended_by)
        for t in (ta, tb):
            t.channels = {k: v[:upto[k]] if added is not None and k in upto else v
                          for k, v in t.channels.items() if k in (*upto, "end")}
            if "end" in t.channels and (tb.unapplied or added is not None or capped):
                t.channels["end"] = t.channels["end"][:1] if added is None and not capped else []
        if capped:
            for k in upto:
                shorter = min(len(ta.channels.get(k, [])), len(tb.channels.get(k, [])))
                ta.channels[k], tb.channels[k] = ta.channels.get(k, [])[:shorter], tb.channels.get(k, [])[:shorter]
        found = diff(ta, tb)
        if found:
            out.append(Violation("same-trace", (single.variant, run.variant), "the AI: " + "; ".join(found)))
    return out


def _acts(run: Run, dec: Declared) -> set[int]:
    """The events that carried a structure's own act (or, in its twin, the same move: a failed step)."""
    return {e.seq for e, call in run.calls_by_event() if e is not None and answer_action(call.get("answer", ""))
            in dec.actions}


def _to_the_shorter(ta: Trace, tb: Trace) -> None:
    """Both traces' channels cut to the shorter of the two, the end and the shared channels left out."""
    for k in set(ta.channels) | set(tb.channels):
        if k in ("end", "kernel", "metrics"):
            ta.channels.pop(k, None)
            tb.channels.pop(k, None)
            continue
        shorter = min(len(ta.channels.get(k, [])), len(tb.channels.get(k, [])))
        ta.channels[k], tb.channels[k] = ta.channels.get(k, [])[:shorter], tb.channels.get(k, [])[:shorter]


def same_trace(runs: Sequence[Run]) -> list[Violation]:
    """Each variant's run against its Default twin's, projected (see the module docstring), and
    each team Default's AI against the single agent's (`team_vs_single`)."""
    out: list[Violation] = team_vs_single(runs)
    cache: dict[str, dict[str, Any]] = {}
    by_name = {r.variant: r for r in runs}
    for run in runs:
        twin = default_twin(run.spec.variant, [r.spec.variant for r in runs])
        if twin is None:
            continue
        other = by_name[twin.name]
        dec = declared(run.spec.variant)
        for r in (run, other):
            if r.variant not in cache:
                cache[r.variant] = metric_values(r)
        tb = trace_of(run, dec, cache[run.variant])
        ta = trace_of(other, dec, cache[other.variant], like=tb)
        if "llm_budget" in (run.result.ended_by, other.result.ended_by) and _acts(run, dec) | _acts(other, dec):
            _to_the_shorter(ta, tb)  # a declared act spends its own way (the twin's same move fails and
            # is repaired), so where a spending cap ended either run they compare up to the earlier end
        found = diff(ta, tb)
        if found:
            out.append(Violation("same-trace", (other.variant, run.variant), "; ".join(found)))
    return out
