"""Approval gating: held actions, who must sign them, and what became of them.

A gated action does not take effect when proposed. It becomes a `Request` with a unique id
("req-1", "req-2", ... in proposal order), shown to its signatory, who approves (the action
then takes effect as the proposer's) or rejects it (it never does). An approved action waits
only on the earlier requests it depends on (`waits_on`, issue 42): a cell on the earlier
held cells (whose kernel state it may read), an edit on the earlier held edits (it replaces
the editor they write; a gate table names one signatory per action, so these are the same
signatory's own pending decisions), any action on an earlier held finish (which, once it
takes effect, ends the session before it); a message on nothing. So one signatory's silence
never holds another signatory's approved edit, and actions that build on each other still
land in the order they were proposed. An approved edit proposed before the edit now in the
editor (an ungated one made meanwhile) is superseded (the engine logs `request_superseded`
and leaves the editor as it is): the editor ends where the Default twin's does. Once a finish takes effect,
every request proposed after it is void (`void_after`): it never takes effect, whatever its
signatory does, as in the Default twin, where the finish ended the session before it was
proposed. The proposer sees the decision and its reason. The engine's closing pass decides
what is open before the session ends; a request still pending after it (a signatory whose
answers kept failing) is expired.

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
anyone knows them"). A signatory's section also names the gates it holds, and a proposer's and a
signatory's the held edits of the result not yet in effect (`held_drafts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from colabkit.session.actions import Action, InvalidAction
from colabkit.team import DATA_CHANGING_RULE, GateRule, GateTable, MemoryRecord, VariantConfig

GATE_RULES_TITLE = "Gate rules"
BOOKKEEPING_TITLE = "Requests and decisions"
"""The section of a member's view listing requests and decisions (structure bookkeeping, issue
42): after the common part, in a budget of its own (`prompting.observation`)."""
HELD_SECTIONS = ("Approval requests for you", "Your requests", BOOKKEEPING_TITLE)
"""The sections held requests bring to a member's view (a structure with `holds` declares them)."""
SET_BY = {"self": "Set by: the team, agreed in the Shared Group Memory before the task.",
          "preassigned": "Set by: assigned to the team before the task."}
_GATE_RULE_INTRO = ("An action listed here takes effect only after its signatory approves it; until then it is "
                    "held as a request. Nobody's own action is held by a gate they sign. Other actions take "
                    "effect at once.")

_ORDERED = ("execute_code", "edit_result")
"""Held actions whose effects build on the earlier ones of their kind: cells read the kernel state
earlier cells leave; an edit replaces the editor an earlier edit wrote."""
DRAFTS_HEAD = ("Held edits of the result, not yet in effect (the result editor shows the text in force, "
               "not these drafts):")
EXISTING_NAMES_SHOWN = 40
"""At most this many existing names are listed in the gate rules (the rest are counted)."""
RequestStatus = Literal["pending", "approved", "rejected", "expired", "voided"]


def gate_table(variant: VariantConfig, memory: MemoryRecord | None) -> GateTable | None:
    """The gate table in force for this variant, read from the right place."""
    if variant.gate_source == "self":
        return memory.gates if memory is not None else None
    if variant.gate_source == "preassigned":
        return variant.preassigned
    return None


def held_drafts(requests: Sequence[Request], participant: str) -> list[str]:
    """What `participant` is told of the held edits of the result it proposed or signs that have not
    taken effect yet (pending, or approved and waiting on an earlier request), in proposal order.

    Why here: such a draft is not in the result editor, which shows the text in force, so a
    member who reads "(empty)" there would not know a hypothesis is on its way. The note belongs
    to the gating structure's own section, never to the common editor view, which must read as
    the Default twin's does (docs/fidelity.md, issue 42); members with no part in the request are
    told nothing, as in the twin (the AI agent sees every request in "Requests and decisions").
    The section sits in the prompt's stable head, so while a draft is held a provider's prefix
    cache reuses less of the two members' prompts: the price of saying it where the structure speaks."""
    lines = []
    for r in requests:
        if r.action.type != "edit_result" or participant not in (r.proposer, r.signatory) \
                or r.applied or r.status not in ("pending", "approved"):
            continue
        whose = "your" if r.proposer == participant else f"{r.proposer}'s"
        signer = "your" if r.signatory == participant else f"{r.signatory}'s"
        fate = f"awaits {signer} decision" if r.status == "pending" else \
            "is approved and takes effect once the earlier requests it waits on are decided"
        lines.append(f"- {r.request_id}, {whose} edit of the result, {fate}")
    return lines


def gate_rules_text(table: GateTable | None, source: str, participant: str,
                    existing: Sequence[str] = (), cost: str = "", drafts: Sequence[str] = ()) -> str | None:
    """The gate-rules section `participant` sees, or None when the variant gates nothing.

    `source` is the variant's `gate_source` ("self" or "preassigned"); it only picks the
    "Set by" line. The rules are listed as `GateRule.describe` writes them, then, where a rule
    holds data-changing code only, what that means (`DATA_CHANGING_RULE`) and the names that
    exist now (`existing`, the engine's own list), so a member can tell before proposing a cell
    whether it will be held; then the gates `participant` signs, if any; last, the held drafts
    of the result it proposed or signs (`drafts`, `held_drafts`' lines). `cost` is what a held
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
        lines.append(f"You sign: {', '.join(held)} (by anyone else); you approve or reject each such request in a "
                     "decision step of its own.")
    if drafts:
        lines += [DRAFTS_HEAD, *drafts]
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
    seq: int = 0  # the log position of its proposal (`pending` event): when it was proposed
    status: RequestStatus = "pending"
    reason: str = ""
    applied: bool = False  # an approved action that has taken effect (`Gatekeeper.due`), or superseded

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

    def open(self, action: Action, proposer: str, rule: GateRule, round: int, seq: int = 0) -> Request:
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
            seq=seq,
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

    def waits_on(self, request: Request) -> list[Request]:
        """The earlier requests still open that `request`'s effect depends on (module docstring):
        for a cell the earlier held cells, for an edit the earlier held edits, for any action an
        earlier held finish."""
        earlier = list(self.requests.values())[: list(self.requests).index(request.request_id)]
        return [r for r in earlier if r.status == "pending" and (
            r.action.type == "finish" or r.action.type == request.action.type in _ORDERED)]

    def due(self, *, force: bool = False) -> list[Request]:
        """Approved requests not yet applied whose effect is now due, in proposal order: each once
        nothing it waits on is open (`force`: at the end, whatever is still open). The engine
        marks each `applied` as it applies it."""
        return [r for r in self.requests.values()
                if r.status == "approved" and not r.applied and (force or not self.waits_on(r))]

    def void_after(self, finish: Request | None) -> list[Request]:
        """Once a finish has taken effect: mark every request proposed after it (`finish`; None: an
        ungated finish, after which nothing can be proposed) and not applied as void; return them."""
        if finish is None:
            return []
        later = list(self.requests.values())[list(self.requests).index(finish.request_id) + 1:]
        voided = [r for r in later if r.status in ("pending", "approved") and not r.applied]
        for request in voided:
            request.status = "voided"
        return voided

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
