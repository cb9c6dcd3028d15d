"""The documented rules one run must keep on its own: who is asked when, what each member is
shown, how a malformed answer is repaired, and that a structure is put in force (issue 42).

The twin comparison (`trace`) sees what a structure changes. A change to the team's common
rules (who is woken, what a teammate is shown) fires alike in both twins of every pair and has
no counterpart in the single agent, so no comparison of variants can see it. These checks hold
each run against the rules as docs/fidelity.md and the scheduler's docstring state them,
recomputed from the run's events by an oracle written from those words (`documented`), not
imported from the engine (one that called the engine's functions would agree with any change
to them):

- `asked-as-documented`: a round's turns come in the order drawn from the seed and the round,
  one turn each at most; the clock's keeper (the AI agent, or a human alone) is asked every
  round while it has steps left; any other member is asked exactly when it has steps left and
  either did not wait at its last step or a teammate's act it can see came since
  (`documented.DocumentedRules`).
- `shown-as-documented`: each step's prompt shows what the rules say it shows (`shown`).
- `acted-as-answered`: each step taken is the answer its model gave (its action, its content,
  a message's recipients as `to` names them), and a well-formed common action on offer never
  fails.
- `repaired-once`: a malformed answer is asked to be repaired once (docs/providers.md); a step
  fails after its repair fails, never before, and a repaired answer is the step; the repair
  says the answer was cut off only when it was (the audit's double never is).
- `structure-in-force`: a variant's structures are put in force: a build phase declared is run,
  and each structure's sections are in its members' task prompts (some of them, some time).
- `ended-as-documented`, `logged-as-done`, `charged-as-reported`: the end by the rule in force
  and as soon as it says, the log as the workspace holds it, each request charged what its
  provider reported (`ledger`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from colabkit.runner.audit.documented import DocumentedRules, named, user_prompt
from colabkit.runner.audit.ledger import charged, ended, logged
from colabkit.runner.audit.player import Run, open_requests
from colabkit.runner.audit.projection import declared, sections_of
from colabkit.runner.audit.shown import shown
from colabkit.runner.audit.violation import Violation
from colabkit.session.events import DECISION_STEP, INVALID_OUTPUT, SYSTEM, Event
from colabkit.session.structure.registry import structures_for

CONDUCT = ("asked-as-documented", "shown-as-documented", "acted-as-answered", "repaired-once", "structure-in-force",
           "ended-as-documented", "logged-as-done", "charged-as-reported")
_COMMON_ACTIONS = ("send_message", "execute_code", "edit_result", "finish")
_CONTENT = {"send_message": "text", "execute_code": "code", "edit_result": "text"}
"""Where a common step keeps its content (`Action.args`)."""


def check_conduct(run: Run) -> list[Violation]:
    """Every check of this module on one run (see the module docstring)."""
    if run.result.ended_by in ("error", "provider_error"):
        return []  # a crash is reported as such (`invariants.check_all`)
    rules = DocumentedRules(run)
    seen = zip(CONDUCT, (asked(rules, run), shown(rules, run), answered(rules, run), repaired(run), in_force(run),
                         ended(rules, run), logged(run), charged(run)))
    return [Violation(name, (run.variant,), text) for name, texts in seen for text in texts[:3]]  # the first of each


def asked(rules: DocumentedRules, run: Run) -> list[str]:
    out = [f"{e.participant} was given a decision step in round {e.round} with no request open for it"
           for e, call in run.calls_by_event() if e is not None and e.phase == "task" and e.args.get(DECISION_STEP)
           and len(call["messages"]) <= 2 and not open_requests(user_prompt(call))]
    for r in sorted({e.round for e in rules.steps}):
        turns = [e.participant for e in rules.steps if e.round == r]
        if turns != [p for p in rules.order(r) if p in turns]:
            out.append(f"round {r}'s turns came {turns}, not in the drawn order {rules.order(r)}")
    final = max((e.round for e in run.events if e.phase == "task"), default=0)
    last = rules.steps[-1] if rules.steps else None
    whole = run.result.ended_by in ("idle", "max_rounds")  # the last round ran to its end
    for r in range(1, final + 1):
        order = rules.order(r)
        if last is not None and r == last.round and not whole:
            order = order[:order.index(last.participant)]  # then the session ended
        elif r == final and r != (last.round if last else 0) and not whole:
            continue  # it ended in this round before its next step (a finish brought into effect)
        for i, pid in enumerate(order):
            took = any(e.participant == pid and e.round == r for e in rules.steps)
            if took != rules.should_ask(pid, (r, i)):
                out.append(f"{pid} {'was' if took else 'was not'} asked in round {r} (steps left "
                           f"{rules.left(pid, (r, i))}; the wake rule says {'not' if took else 'yes'})")
    return out


def answered(rules: DocumentedRules, run: Run) -> list[str]:
    """Each step taken is the answer its model gave: its action, its content, a message's recipients
    as `to` names them ("all", "everyone" or nothing: everyone; else the teammates named); and a
    well-formed common action on offer (content given, recipients on the team) never fails."""
    out = []
    first: dict[int, dict[str, Any]] = {}
    last: dict[int, tuple[Event, dict[str, Any]]] = {}  # its repair's, if any
    for e, call in run.calls_by_event():
        if e is not None:
            first.setdefault(e.seq, call)
            last[e.seq] = (e, call)
    for seq, (e, call) in last.items():
        if e.kind == "machinery" and e.phase == "task" and e.participant in rules.team:
            out += _decided(e, call, open_requests(user_prompt(first[seq])))
    for e, call in (last[x.seq] for x in rules.steps if x.seq in last and x.action != INVALID_OUTPUT):
        try:
            said = json.loads(call.get("answer", ""))
        except ValueError:
            continue
        content, to = str(said.get("content", "")).strip(), str(said.get("to", ""))
        if e.status == "failed_step":
            offered = re.findall(r"^- ([a-z_]+):", dict(sections_of(user_prompt(first[e.seq]))).get("Valid actions", ""), re.M)
            if e.action in _COMMON_ACTIONS and e.action in offered and content and named(to, e.participant, rules.team,
                                                                                             strict=True) != ():
                out.append(f"{e.participant}'s well-formed {e.action} in round {e.round} failed: {e.result[:80]}")
            continue
        if said.get("action") != e.action:
            out.append(f"{e.participant} answered {str(said)[:60]!r} and took {e.action} in round {e.round}")
            continue
        took = str(e.args.get(_CONTENT[e.action], "")).strip() if e.action in _CONTENT else content
        if took != content:  # (a structure's action reads its content its own way)
            out.append(f"{e.participant}'s {e.action} in round {e.round} took {took[:40]!r}, not {content[:40]!r}")
        if e.action == "send_message" and named(to, e.participant, rules.team) != \
                (tuple(e.args["to"]) if e.args.get("to") else None):
            out.append(f"{e.participant}'s message in round {e.round} went to {e.args.get('to')}, not as {to!r} names")
    return out


def _decided(e: Event, call: dict[str, Any], shown: list[str]) -> list[str]:
    """A decision that names a request listed open for the member is that decision on that request."""
    try:
        said = json.loads(call.get("answer", ""))
    except ValueError:
        return []
    verdict = {"approve": "approved", "reject": "rejected"}.get(str(said.get("action", "")))
    target = str(said.get("to", "")).strip()
    if verdict is None or target not in shown or (e.decision, e.request_id) == (verdict, target):
        return []
    return [f"{e.participant} answered {said.get('action')} {target} in round {e.round} and the log has "
            f"{e.action} {e.status} on {e.request_id}"]


def repaired(run: Run) -> list[str]:
    out = []
    cut = {e.seq for e, call in run.calls_by_event()  # a repair saying its answer was cut off
           if e is not None and len(call["messages"]) > 2 and "was cut off" in user_prompt(call)}
    for e in run.events:
        invalid = [(c.error or "").startswith("invalid ") for c in e.llm_calls]
        if e.seq in cut:
            out.append(f"{e.participant}'s repair in round {e.round} says its answer was cut off; it was not")
        if invalid and invalid[-1] and sum(invalid) != 2:  # no answer validated: the step failed
            out.append(f"{e.participant}'s {e.phase} step in round {e.round} failed after {sum(invalid)} malformed "
                       "answer(s), not after one repair")
        elif invalid and not invalid[-1] and sum(invalid) > 1:
            out.append(f"{e.participant}'s {e.phase} step in round {e.round} took {sum(invalid)} repairs")
    return out


def in_force(run: Run) -> list[str]:
    """Each structure is put in force: its build phase runs, and its sections are in the task's prompts."""
    dec = declared(run.spec.variant)
    out = []
    if dec.builds and not any(e.phase == "build" and e.participant != SYSTEM and e.llm_calls for e in run.events):
        out.append("its structure has a build phase and no member took part in one")
    titles = {title for e, call in run.calls_by_event() if e is not None and e.phase == "task" and e.kind == "step"
              for title, _ in sections_of(user_prompt(call))}
    for structure in structures_for(run.spec.variant):
        own = type(structure).sections
        if own and titles and not any(t.startswith(own) for t in titles):
            out.append(f"{type(structure).__name__}'s sections ({', '.join(own)}) are in no member's task prompt")
    return out
