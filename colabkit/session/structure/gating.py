"""Approval gating: held actions, who must sign them, and what became of them.

A gated action does not take effect when proposed. It becomes a `Request` with a unique id
("req-1", "req-2", ... in proposal order), shown to its signatory, who approves (the action
then takes effect as the proposer's) or rejects it (it never does). Approved actions take
effect in proposal order (`due`): one approved while an older request is still open waits
until every older one is decided, so the team's actions land in the order they were
proposed whatever order the signatories decide in (with signatories who approve everything,
a gated variant ends where its ungated twin would). The proposer sees the decision and its
reason. The engine's closing pass decides what is open before the session ends; a request
still pending after it (a signatory whose answers kept failing) is expired.

Where the gate table comes from is the variant's `gate_source`: "self" reads the frozen
memory's table (Scaffolded), "preassigned" the variant's fixed table, "none" gates nothing.
Both tables hold only rules whose signatory is on the team (absent ones were dropped and
reported when the table was made). Which rule applies is the team layer's
(`GateTable.rule_for`): a proposer named as the signatory of its own action is not gated,
and nobody else is drafted in. The rule's scope and note are shown with the request.

Every member of a gated variant sees the table in force in every task-phase observation
(`gate_rules_text`), in one section with the same wording whoever chose it; one line says
who set it, which is the one thing Scaffolded and Preassigned differ in by design (issue 16:
a table known only once a request appears confounded "who chose the gates" with "whether
anyone knows them"). A signatory's section also names the gates it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from colabkit.session.actions import Action, InvalidAction
from colabkit.team import DATA_CHANGING_RULE, GateRule, GateTable, MemoryRecord, VariantConfig

GATE_RULES_TITLE = "Gate rules"
SET_BY = {"self": "Set by: the team, agreed in the Shared Group Memory before the task.",
          "preassigned": "Set by: assigned to the team before the task."}
_GATE_RULE_INTRO = ("An action listed here takes effect only after its signatory approves it; until then it is "
                    "held as a request. Nobody's own action is held by a gate they sign. Other actions take "
                    "effect at once.")

EXISTING_NAMES_SHOWN = 40
"""At most this many existing names are listed in the gate rules (the rest are counted)."""
RequestStatus = Literal["pending", "approved", "rejected", "expired"]


def gate_table(variant: VariantConfig, memory: MemoryRecord | None) -> GateTable | None:
    """The gate table in force for this variant, read from the right place."""
    if variant.gate_source == "self":
        return memory.gates if memory is not None else None
    if variant.gate_source == "preassigned":
        return variant.preassigned
    return None


def gate_rules_text(table: GateTable | None, source: str, participant: str,
                    existing: Sequence[str] = (), cost: str = "") -> str | None:
    """The gate-rules section `participant` sees, or None when the variant gates nothing.

    `source` is the variant's `gate_source` ("self" or "preassigned"); it only picks the
    "Set by" line. The rules are listed as `GateRule.describe` writes them, then, where a rule
    holds data-changing code only, what that means (`DATA_CHANGING_RULE`) and the names that
    exist now (`existing`, the engine's own list), so a member can tell before proposing a cell
    whether it will be held; then the gates `participant` signs, if any. `cost` is what a held
    action costs in turns (`colabkit.session.rules.gate_cost`), after the intro.
    """
    if table is None or source not in SET_BY:
        return None
    lines = [f"{GATE_RULES_TITLE}\n{SET_BY[source]}\n{_GATE_RULE_INTRO}" + (f" {cost}" if cost else "")]
    lines += [f"- {rule.describe()}" for rule in table.rules] or ["- none: every action takes effect at once"]
    if any(rule.scope == "data_changing" for rule in table.rules):
        names = ", ".join(existing[:EXISTING_NAMES_SHOWN]) + (
            f" and {len(existing) - EXISTING_NAMES_SHOWN} more" if len(existing) > EXISTING_NAMES_SHOWN else "")
        lines += [DATA_CHANGING_RULE, f"Names that exist now: {names or 'none yet'}."]
    held = [rule.action for rule in table.rules if rule.signatory == participant]
    if held:
        lines.append(f"You sign: {', '.join(held)} (by anyone else); approve or reject each such request.")
    return "\n".join(lines)


@dataclass
class Request:
    """A held action and its fate (mutable: its status changes once, when decided)."""

    request_id: str
    proposer: str
    signatory: str
    action: Action
    rule: GateRule
    round: int
    status: RequestStatus = "pending"
    reason: str = ""
    applied: bool = False  # an approved action that has taken effect (`Gatekeeper.due`)

    @property
    def condition(self) -> str:
        """The rule's scope and note, as the signatory reads them ('' when there are none)."""
        return self.rule.terms()


class Gatekeeper:
    """Opens, routes and decides requests for one session."""

    def __init__(self, table: GateTable | None, team: Sequence[str]) -> None:
        self.table = table
        self.team = tuple(team)
        self.requests: dict[str, Request] = {}

    def rule_for(self, action: Action, proposer: str, existing: Sequence[str] = ()) -> GateRule | None:
        """The rule holding this action (with the names `existing` before it), or None when it
        takes effect at once."""
        # Decisions and waits are never gated (GateRule refuses them), so no regress.
        if self.table is None or len(self.team) < 2:
            return None
        return self.table.rule_for(action.type, proposer, content=action.payload, existing=existing)

    def open(self, action: Action, proposer: str, rule: GateRule, round: int) -> Request:
        """Hold `action` as a new pending request routed to the rule's signatory."""
        if rule.signatory == proposer or rule.signatory not in self.team:
            # rule_for and the tables' team restriction promise neither; a violation is a bug.
            raise RuntimeError(f"gate rule {rule!r} is not signable for proposer {proposer!r} on team {self.team}")
        request = Request(
            request_id=f"req-{len(self.requests) + 1}",
            proposer=proposer,
            signatory=rule.signatory,
            action=action,
            rule=rule,
            round=round,
        )
        self.requests[request.request_id] = request
        return request

    def decide(self, request_id: str, signatory: str, decision: Literal["approved", "rejected"], reason: str) -> Request:
        """Record a decision; raise `InvalidAction` when `signatory` may not make it."""
        request = self.requests.get(request_id)
        if request is None:
            mine = [r.request_id for r in self.addressed_to(signatory)]
            raise InvalidAction(
                f"unknown request {request_id}; pending for you: {', '.join(mine) if mine else 'none'}"
            )
        if request.proposer == signatory:
            raise InvalidAction(f"{request_id} is your own request; nobody signs their own request")
        if request.signatory != signatory:
            raise InvalidAction(f"{request_id} is addressed to {request.signatory}, not to you")
        if request.status != "pending":
            raise InvalidAction(f"{request_id} was already {request.status}")
        request.status = decision
        request.reason = reason
        return request

    def older_open(self, request: Request) -> list[Request]:
        """Requests proposed before `request` and still undecided (its effect waits for them)."""
        older = list(self.requests)[: list(self.requests).index(request.request_id)]
        return [self.requests[r] for r in older if self.requests[r].status == "pending"]

    def due(self, *, force: bool = False) -> list[Request]:
        """Approved requests whose effect is now due, marked applied, in proposal order: each once
        every older request is decided (`force`: at the end, whatever is still open)."""
        due = []
        for request in self.requests.values():
            if request.status == "pending" and not force:
                break
            if request.status == "approved" and not request.applied:
                request.applied = True
                due.append(request)
        return due

    def addressed_to(self, participant: str) -> list[Request]:
        return [r for r in self.requests.values() if r.status == "pending" and r.signatory == participant]

    def proposed_by(self, participant: str) -> list[Request]:
        return [r for r in self.requests.values() if r.proposer == participant]

    def expire_pending(self) -> list[Request]:
        """Mark every still-pending request expired (session end); return them."""
        expired = [r for r in self.requests.values() if r.status == "pending"]
        for request in expired:
            request.status = "expired"
        return expired
