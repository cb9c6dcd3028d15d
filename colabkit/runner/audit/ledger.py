"""The end, the log and the charges of one run, against the documented rules (`conduct`):

- `ended-as-documented`: a session ends by the rule in force and as soon as it says (the
  scheduler's docstring): a finish only when one took effect (under the AI's clock, the
  keeper's); by budget when the rule's budget is spent (under the AI's clock the keeper's, under
  `either_side` a side's, under `all_sides` every side's, or the team cap), at the step that
  spent it; by idleness (Co-Gym's rules only) after `idle_rounds` rounds in which nobody acted;
  by `max_rounds` (Co-Gym's rules only) at that round; and not later than the first of these.
- `logged-as-done`: the event log says what the workspace holds: each cell's author, code and
  status, each message's sender, text and addressees, and the editor's final text as the last
  edit in force.
- `charged-as-reported`: every request is charged what its provider reported (the audit's
  double reports `player.PROMPT_CHARGE` and `ANSWER_CHARGE` tokens for every request).
"""

from __future__ import annotations

from colabkit.runner.audit.documented import DocumentedRules
from colabkit.runner.audit.player import ANSWER_CHARGE, PROMPT_CHARGE, Run
from colabkit.session.events import Event

_INFRASTRUCTURE = ("llm_budget", "provider_error", "provider_unavailable", "kernel_unavailable", "error")
"""Ends that are not the rules' (the cost cap, a provider, a crash): checked elsewhere, or not the team's."""
_PRIORITY = {"finish": 0, "budget": 1, "idle": 2, "max_rounds": 3}
"""Ends due at one point, in the order the engine checks them."""


def ended(rules: DocumentedRules, run: Run) -> list[str]:
    how = run.result.ended_by
    if how in _INFRASTRUCTURE:
        return []
    task = [e for e in run.events if e.phase == "task"]
    finish = next((e for e in task if e.action == "finish" and e.status == "ok"), None)
    ends: list[tuple[float, int, str]] = []  # (where: a seq, or just after a round's last event; which)
    if finish is not None:
        ends.append((finish.seq, _PRIORITY["finish"], "finish"))
    spent = next((e.seq for e in rules.steps if _spent(rules, e)), None)
    if spent is not None:
        ends.append((spent, _PRIORITY["budget"], "budget"))
    if not rules.clock:  # Co-Gym's rules: idleness and the round limit end a session too
        k, limit = rules.settings.idle_rounds, rules.settings.max_rounds
        idle = next((r for r in range(k, limit + 1)
                     if not any(rules.spends(x) for x in rules.steps if r - k < x.round <= r)), None)
        if idle is not None:
            ends.append((_round_end(task, idle), _PRIORITY["idle"], "idle"))
        ends.append((_round_end(task, limit), _PRIORITY["max_rounds"], "max_rounds"))
    if not ends:
        return []  # under the AI's clock with its budget unspent: `ai-opportunity`'s to say
    at, _, want = min(ends)
    if how == "finish" and finish is not None and want != "finish":  # a held finish approved in the closing
        want = "finish"  # pass, after the end the rules called: the session ended as a finish (docs/fidelity.md)
    out = [] if how == want else [f"ended by {how}; the rules end it by {want} first (at event {at:g})"]
    late = [e for e in rules.steps if e.seq > at]
    if late:
        out.append(f"{len(late)} step(s) after the rules' end by {want} (the first: {late[0].participant}'s "
                   f"{late[0].action} in round {late[0].round})")
    if want == "finish" and rules.clock and finish is not None and (finish.proposer or finish.participant) != rules.keeper:
        out.append(f"{finish.participant}'s finish ended it under the AI's clock; only the keeper may finish")
    return out


def _round_end(task: list[Event], round: int) -> float:
    """Just after the last event of `round` (or of the session, if it ended before)."""
    return max((e.seq for e in task if e.round <= round), default=0) + 0.5


def _spent(rules: DocumentedRules, e: Event) -> bool:
    """Whether, after step `e`, the rule's budget is spent (the team cap, or the rule's sides)."""
    after = (e.round, rules.at(e)[1] + 1)
    cap = rules.settings.team_action_budget
    if cap is not None and sum(rules.spends(x) for x in rules.steps if rules.at(x) < after) >= cap:
        return True
    spent = {rules.holder(p): rules.left(p, after) == 0 for p in rules.team}
    mine = spent[rules.holder(e.participant)]
    if rules.clock:
        return e.participant == rules.keeper and mine
    return mine if rules.settings.termination == "either_side" else all(spent.values())


def logged(run: Run) -> list[str]:
    out = []
    snapshot = run.result.snapshot
    cells = {c.index: c for c in snapshot.cells}
    for e in (x for x in run.events if x.cell_index is not None):
        cell = cells.get(e.cell_index or 0)
        who = e.proposer or e.participant
        if cell is None or (cell.author, cell.code, cell.status) != (who, e.args.get("code"), e.status):
            out.append(f"cell {e.cell_index} is logged as {who}'s {e.status} cell, the notebook holds "
                       f"{(cell.author, cell.status) if cell else 'none'}")
    messages = {m.index: m for m in snapshot.messages}
    for e in (x for x in run.events if x.message_index is not None):
        m = messages.get(e.message_index or 0)
        to = tuple(e.args["to"]) if e.args.get("to") else None
        if m is None or (m.sender, m.text, tuple(m.to) if m.to else None) != (e.proposer or e.participant,
                                                                              e.args.get("text"), to):
            out.append(f"message #{e.message_index} is logged otherwise than the chat holds it")
    edits = [x for x in run.events if x.editor_version is not None]
    text = str(edits[-1].args.get("text", "")) if edits else ""
    if run.result.final_hypothesis.strip() != text.strip():
        out.append(f"the answer is {run.result.final_hypothesis[:40]!r}, the last edit in force {text[:40]!r}")
    return out


def charged(run: Run) -> list[str]:
    wrong = [e for e in run.events for c in e.llm_calls if not c.suite_replay
             and (c.prompt_tokens, c.completion_tokens) != (PROMPT_CHARGE, ANSWER_CHARGE)]
    return [f"{e.participant}'s request in round {e.round} is charged otherwise than reported" for e in wrong[:1]]
