"""The session engine: the loop and the effects of one running session (`_Session`).

`colabkit.session.run.run_session` opens the workspace, plays a `_Session` to its end and
returns how it ended. The engine owns the loop and the effects; the pieces it composes each
answer one question: `observation` (what may this participant see), `react` (what does its
model answer), `actions` (what does the answer mean, what is on offer), `scheduler` (who acts
next, is it over: budgets under the `termination` setting, idleness), and the variant's
coordination structures (`colabkit.session.structure`, one `Composition` of `Structure`s: the
build phase, the sections each adds to an observation, the actions each adds, the actions it
holds for a signatory, its own requests). The engine knows no structure by name: it calls their
hooks and keeps the one ledger of held requests (`Gatekeeper`: req-N, decisions, the order
approved actions take effect in). `preview` sets a session up with this module's own code to
show what each participant is given, without a model.

The closing pass (`_Session.closing_pass`): before every end but a crash or a provider
refusal (the AI's last step, a finish, idleness or max rounds under the Co-Gym rules, the
cost cap), every open request is decided: each signatory with open requests decides one,
off budget, in the seed's closing order, repeated until none is open (at most as many
times as requests were open when it began). A finish proposed while requests are open
takes effect after them: the editor is read once the pass is over. Only a signatory whose
answers keep failing leaves a request open; it expires (`request_expired`, counted by action
in `Totals`, and the `session_end` event says how many).

Noninterference by construction (issue 42; docs/fidelity.md): what a structure does not declare
is computed without it. Every event has a kind (`Event.kind`): a member's step, an approved
action's effect, machinery (the build, decision steps, the closing pass) or the system's;
machinery spends no member's step (the AI's clock included), is charged apart from the task's
cap (`spend`), and is kept out of initiative and work. A member decides only in decision steps
of its own (`decision_steps`), never in its own step, which offers what a Default twin's does;
what wakes a waiting member is a teammate's act it can see (`scheduler.acts_in_view`), never a
structure's bookkeeping. An approved action waits only on the earlier requests it depends on
(`Gatekeeper.waits_on`); once a finish takes effect, what was proposed after it is void.

Forks (`colabkit.session.fork`): with `fork=ForkReplay(...)` the same engine replays a
stored session's first N events and continues from there with one change. The hook is
called at three points only (a turn's start, the model answer of a turn, a cell's result)
and may replace `spec`/`variant`/the structures' `board` at N; without it nothing here changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, Literal

from colabkit.llm import CallRecord, Gateway
from colabkit.session.actions import (
    Action,
    InvalidAction,
    StepSchema,
    step_targets,
    to_action,
    valid_actions,
)
from colabkit.session.events import (
    CLOSING_PASS,
    DECISION_STEP,
    INVALID_OUTPUT,
    REQUEST_SUPERSEDED,
    REQUEST_VOIDED,
    SYSTEM,
    EndedBy,
    EventLog,
    GateRuleRef,
)
from colabkit.session.hooks import ReplayHook
from colabkit.session.prompting.observation import Observation, build_observation
from colabkit.session.prompting.views import Thought, cell_output, clip
from colabkit.session.rules import budget_line, end_rule
from colabkit.session.scheduler import Scheduler, acts_in_view, closing_order, round_order
from colabkit.session.seats.policy import Question, Seat, SeatAnswer, answer
from colabkit.session.seats.react import Answer, step_messages, step_schema
from colabkit.session.settings import SessionSpec
from colabkit.session.spend import Spend
from colabkit.session.structure.base import Board
from colabkit.session.structure.gating import Gatekeeper, Request
from colabkit.session.structure.registry import composition
from colabkit.tasks import Task
from colabkit.team import private_briefing
from colabkit.workspace import Workspace

RESULT_CHARS = 500
CLOSING_ENDS: tuple[EndedBy, ...] = ("finish", "budget", "idle", "max_rounds", "llm_budget")
"""Ends preceded by the closing pass: every end but a crash or a provider refusal, which
cannot ask a model again (the cost cap's pass runs past the cap, `run.run_session`)."""


class _Session:
    """The mutable state of one running session."""

    def __init__(self, spec: SessionSpec, task: Task, ws: Workspace, gateway: Gateway, log: EventLog,
                 seats: Mapping[str, Seat], fork: ReplayHook | None = None) -> None:
        self.spec, self.task, self.ws, self.gateway, self.log, self.seats = spec, task, ws, gateway, log, seats
        self.fork = fork  # a fork's hook may replace spec (seed, models), variant and the board at its point
        self.variant = spec.variant
        self.structure = composition(self.variant)  # the variant's coordination structures (`structure.base`)
        self.team = self.variant.team
        self.briefings: dict[str, str] = {}
        # The thought of every own step (the profile decides how many are shown); stamped when
        # formed, before its action takes effect, so it comes before that effect in the timeline.
        # A decision step's stays on its event: a Default twin has no such thought to show.
        self.scratch: dict[str, list[Thought]] = {pid: [] for pid in self.team}
        self.profile = spec.profile
        self.sides = {pid: self.variant.persona(pid).role for pid in self.team}
        self.sched = Scheduler(spec.settings, self.sides)
        self.cells_at_request: dict[str, int] = {}  # request id -> cells run when it was made
        self.board = Board()  # what the structures build and read
        self.requests = Gatekeeper(None, self.team)  # the held actions (req-N) of every structure's holds
        self.round = 0
        self.budget_side: str | None = None  # what ended the session by budget (`Scheduler.budget_end`)
        self.closing = False  # in the closing pass (`closing_pass`)
        self.editor_seq = -1  # the log position at which the edit now in the editor was proposed
        self.finished = False  # a finish has taken effect: the session ends "finish" (`closing_pass`)
        self.spend = Spend(gateway)  # the task's cap, the machinery's account, the build's budget
        self.deciding = False  # in a decision step (`decision_steps`)

    async def play(self) -> EndedBy:
        """The structures' build phase (if any), then task rounds until an end."""
        # Logged in the phase the session starts with, so phases never go task -> build -> task.
        self.log.emit(phase="build" if self.structure.builds else "task", round=0, participant=SYSTEM,
                      action="session_start", status="info", result=f"team {', '.join(self.team)}",
                      args={"task_id": self.task.id, "variant": self.variant.name, "seed": self.spec.seed,
                            "team": list(self.team), "isolation": self.ws.isolation.level,
                            "personas": {p: self.variant.persona(p).version for p in self.team},
                            **({"persons": {p: self.spec.model_for(p).model for p in self.seats}}
                               if self.seats else {})})
        # off the event loop: it reads each data file's head, slow while a batch's workspaces copy data
        await asyncio.to_thread(self.brief)
        if self.structure.builds:
            await self.build()
        self.start_task()
        return await self.rounds()

    async def build(self) -> None:
        """The structures' build phase, on its own declared budget, never the task's cap (`spend`)."""
        with self.spend.build(self.spec.settings.build_budget):
            await self.structure.build(self)

    async def rounds(self) -> EndedBy:
        """Task rounds until an end (after `start_task`); under the AI's clock its budget ends the
        session by round `Scheduler.round_limit`, as every round asks the AI for one step."""
        for self.round in range(1, self.sched.round_limit + 1):
            for pid in round_order(self.team, self.spec.seed, self.round):
                ended = await self.turn(pid)
                if ended is not None:
                    return ended
            if self.sched.end_round():
                return "idle"
        return "max_rounds"

    def brief(self) -> None:
        """Give every participant its private briefing (before the build phase, if any)."""
        self.briefings = {pid: private_briefing(self.variant.persona(pid), self.task,
                                                max_chars=self.profile.briefing_chars) for pid in self.team}

    def start_task(self) -> None:
        """Put the structures' rules in force (`Structure.start`), once their build is over.

        Separate from `play` so `colabkit.session.prompting.preview` sets a session up exactly as here
        (with a placeholder build) to show what each participant is given.
        """
        self.structure.start(self)

    def has_requests(self, pid: str) -> bool:
        """Whether a held request or a structure's own request waits for `pid`'s decision."""
        return bool(self.open_ids(pid))

    def open_ids(self, pid: str) -> tuple[str, ...]:
        """The held requests (req-N, newest first), then the structures' own (`Structure.open_ids`), open for `pid`."""
        return tuple(r.request_id for r in reversed(self.requests.addressed_to(pid))) + \
            self.structure.open_ids(self, pid)

    def open_requests(self) -> int:
        """Decisions still owed by anyone: every id open for a member's decision."""
        return sum(len(self.open_ids(pid)) for pid in self.team)

    def offered(self, pid: str) -> tuple[str, ...]:
        """What `pid` may do now (`actions.valid_actions`): its schema's enum and its help. Its own
        step never offers a decision (decisions have steps of their own, `decision_steps`), so the
        list is the Default twin's."""
        deciding = self.closing or self.deciding
        return valid_actions(pid, self.team, has_requests=deciding and self.has_requests(pid),
                             decisions_only=deciding, added=self.structure.actions, clock=self.sched.clock,
                             closing=self.closing)

    def observe(self, pid: str) -> Observation:
        side = [p for p in self.team if self.sched.holder(p) == self.sched.holder(pid)]
        return build_observation(
            participant=pid,
            team=self.team,
            names=[self.variant.persona(p).name for p in self.team],
            sees_all=self.sides[pid] == "ai",
            profile=self.profile,
            round=self.round,
            actions_left=self.sched.actions_left(pid),
            ai_actions_left=None if pid == "ai" else self.sched.ai_actions_left(),
            end_rule=f"{end_rule(self.spec.settings, self.sched)}\n{budget_line(self.sched, pid)}",
            budget_holder="you" if len(side) == 1 else f"{' and '.join(side)} together",
            query=self.task.query,
            briefing=self.briefings[pid],
            workspace=self.ws,
            gatekeeper=self.requests,
            cells_at_request=self.cells_at_request,
            events=self.log.events,
            scratchpad=list(self.scratch[pid]),
            closing=self.closing,
            deciding=self.deciding,
            valid_actions=self.offered(pid),
            standing_actions=valid_actions(pid, self.team, has_requests=False, added=self.structure.actions,
                                           clock=self.sched.clock),
            **self.structure.view(self, pid),
        )

    def messages(self, pid: str, observation: Observation) -> list[dict[str, str]]:
        """The chat messages of `pid`'s step: its persona prompt (system) and the observation (user)."""
        return step_messages(self.variant.persona(pid).prompt, observation.render())

    def emit(self, participant: str, action: str, status: Any, **fields: Any) -> None:
        if self.closing and participant != SYSTEM:  # a closing-pass step (`closing_pass`), marked as such
            fields["args"] = {**(fields.get("args") or {}), CLOSING_PASS: True}
        if self.deciding and participant != SYSTEM:  # a decision step (`decision_steps`), likewise
            fields["args"] = {**(fields.get("args") or {}), DECISION_STEP: True}
        self.log.emit(phase="task", round=self.round, participant=participant, action=action, status=status, **fields)

    async def turn(self, pid: str) -> EndedBy | None:
        """One participant's turn: its decisions on the requests open for it, each in a decision
        step of its own (`decision_steps`, machinery), then its step, if it has anything new in
        view; the end it caused, if any. The step is what it is in a Default twin: no decision
        takes its place, no decision is on offer in it."""
        if await self.decision_steps(pid):
            return "finish"
        if self.fork is not None:
            self.fork.before_turn(self)
            if not self.fork.seated(pid):  # a seat a fork emptied from its point (`fork.members`)
                return None
        key = acts_in_view(self.log.events, pid, sees_all=self.sides[pid] == "ai")
        if not self.sched.eligible(pid, key):
            return None
        observation = self.observe(pid)
        step, fields = await self.ask(pid, observation)
        # A wait not on offer is a failed step: it spends budget and is not idleness.
        self.sched.record_step(pid, key, waited=step is not None and step.action == "wait"
                               and "wait" in observation.valid_actions)
        if step is not None and await self.act(pid, step, offered=observation.valid_actions, **fields):
            return "finish"
        self.budget_side = self.sched.budget_end(pid)
        return "budget" if self.budget_side is not None else None

    async def decision_steps(self, pid: str) -> bool:
        """`pid`'s decision steps: while a request is open for it, one step that may only approve
        or reject one of them, or wait to leave them open (asked again at its next turn; the
        closing pass decides what is still open at the end). Machinery (`Event.kind`, marked
        `DECISION_STEP`): no step of any budget, not activity, charged apart (`spend`), so a
        member's own steps are the same turns as in a Default twin, where no request exists.
        At most one step per request open when it began. True when an approved finish took effect."""
        for _ in range(len(self.open_ids(pid))):
            if self.fork is not None:
                self.fork.before_turn(self)
            if not self.has_requests(pid) or (self.fork is not None and not self.fork.seated(pid)):
                break  # nothing open, or a seat a fork emptied (`fork.members`): it decides nothing
            self.deciding = True
            try:
                observation = self.observe(pid)
                step, fields = await self.ask(pid, observation)
                if step is None:
                    break
                if await self.act(pid, step, offered=observation.valid_actions, **fields):
                    return True
                if step.action == "wait":
                    break
            finally:
                self.deciding = False
        return False

    async def ask(self, pid: str, observation: Observation) -> tuple[StepSchema | None, dict[str, Any]]:
        """`pid`'s answer to `observation` (a fork's changed step, a person's or its model's), its
        thought noted; a malformed answer is logged here as a failed step (None)."""
        messages = self.messages(pid, observation)
        offered = observation.valid_actions
        schema = step_schema(self.profile.thought_chars, self.profile.content_chars, offered,
                             step_targets(offered, observation.open_ids))
        override = self.fork.step_for(pid) if self.fork is not None else None
        if override is not None:  # a fork's changed step at its fork point
            reply: SeatAnswer[StepSchema] = SeatAnswer(Answer(override, ()))
        else:  # a person's seat answers the same question, shown the same observation (`seats`)
            with self.spend.turn(machinery=self.closing or self.deciding):
                reply = await answer(self.seats, self.gateway, Question(pid, "step", self.spec.model_for(pid),
                                                                        messages, schema, self.spec.seed, self.team,
                                                                        observation))
            self.spend.charge(reply.answer.records, machinery=self.closing or self.deciding)
        step, person = reply.answer.value, ({"person": reply.person} if reply.person is not None else {})
        if step is None:
            self.emit(pid, INVALID_OUTPUT, "failed_step", result=reply.answer.error or "",
                      llm_calls=reply.answer.records, **person)
            return None, {}
        if not (self.closing or self.deciding):  # a decision step's thought stays on its event (machinery)
            self.scratch[pid].append(Thought(round=self.round, action=step.action, text=step.thought,
                                             time=time.time()))
        return step, {"thought": step.thought, "llm_calls": reply.answer.records, **person}

    async def closing_pass(self, ended_by: EndedBy) -> EndedBy:
        """Before any end but a crash or a provider refusal, decide every open request (held
        actions and the structures' own): each signatory with open requests gets one decision-only
        step (approve/reject, the open ids its enum), off budget, in the seed's closing order,
        and the pass repeats until none is open, at most as many times as requests were open
        when it began (each signatory decides one a time, so only failing answers can leave
        one open). An approved action takes effect before the editor is read, a finish's
        included. The same rule for every variant, so a gated edit proposed at the AI's last
        step, or behind a finish, is decided, not lost to the round order. Returns `ended_by`."""
        bound = self.open_requests()
        if ended_by not in CLOSING_ENDS or not bound:
            return ended_by
        waiting = [pid for pid in closing_order(self.team, self.spec.seed) if self.has_requests(pid)]
        self.emit(SYSTEM, CLOSING_PASS, "info", args={"ended_by": ended_by, "signatories": waiting, "open": bound},
                  result=f"closing pass before the {ended_by} end: {', '.join(waiting)} decide {bound} open requests")
        self.closing = True  # its steps are machinery: past the task's cap, charged apart (`spend`)
        try:
            for _ in range(bound):
                waiting = [pid for pid in closing_order(self.team, self.spec.seed) if self.has_requests(pid)]
                if not waiting:
                    break
                for pid in waiting:
                    if self.fork is not None:
                        self.fork.before_turn(self)
                    if not self.has_requests(pid) or (self.fork is not None and not self.fork.seated(pid)):
                        continue
                    observation = self.observe(pid)
                    step, fields = await self.ask(pid, observation)
                    if step is not None:
                        await self.act(pid, step, offered=observation.valid_actions, **fields)
            await self.release(force=True)  # approvals held behind a request whose signatory's answers failed
        finally:
            self.closing = False
        if self.finished:  # a held finish took effect in the pass: that is how the session ended
            self.budget_side = None
            return "finish"
        return ended_by

    async def act(self, pid: str, step: StepSchema, *, offered: tuple[str, ...] | None = None,
                  **fields: Any) -> bool:
        """Validate and carry out (or hold, or decide) a step; True when a finish took effect.

        `offered`: the actions valid at this step (one outside them, which a provider without
        a grammar may let through, is a failed step)."""
        try:
            if offered is not None and step.action not in offered:
                raise InvalidAction(f"{step.action} is not possible now; possible: {', '.join(offered)}")
            action = to_action(step, pid, self.team, added=self.structure.actions)
        except InvalidAction as exc:
            self.emit(pid, step.action, "failed_step", args=step.model_dump(exclude={"thought"}),
                      result=str(exc), **fields)
            return False
        if action.type == "wait":
            self.emit(pid, "wait", "ok", **fields)
            return False
        if action.type in ("approve", "reject"):
            own = await self.structure.decide(self, pid, action, fields)  # one of a structure's own requests
            return own if own is not None else await self.decide(pid, action, **fields)
        done = self.structure.perform(self, pid, action, fields)  # a structure's own action
        if done is not None:
            return done
        rule = self.structure.hold(self, action, pid)
        if rule is not None:
            request = self.requests.open(action, pid, rule, self.round, seq=len(self.log.events))
            self.cells_at_request[request.request_id] = len(self.ws.cells)
            held = f"held as {request.request_id} until {request.signatory} approves"
            ref = GateRuleRef(action=rule.action, scope=rule.scope, note=rule.note, signatory=rule.signatory)
            self.emit(pid, action.type, "pending", args=action.args(), request_id=request.request_id,
                      signatory=request.signatory, gate_rule=ref, result=held, **fields)
            if self.spec.settings.gate_latency == "at_once":  # its signatory decides now, not at its turn
                return await self.decision_steps(request.signatory)
            return False
        return await self.apply(action, pid, **fields)

    async def decide(self, pid: str, action: Action, **fields: Any) -> bool:
        """A signatory's approve/reject; approved actions then take effect as their proposers', in
        proposal order (`Gatekeeper.due`). True when a finish took effect."""
        decision: Literal["approved", "rejected"] = "approved" if action.type == "approve" else "rejected"
        try:
            request = self.requests.decide(action.request_id or "", pid, decision, action.reason)
        except InvalidAction as exc:
            self.emit(pid, action.type, "failed_step", args=action.args(), result=str(exc), **fields)
            return False
        older = [r.request_id for r in self.requests.waits_on(request)]
        wait = f"; takes effect once {', '.join(older)} {'is' if len(older) == 1 else 'are'} decided" \
            if older and decision == "approved" else ""
        self.emit(pid, action.type, decision, args=action.args(), request_id=request.request_id, signatory=pid,
                  decision=decision, decision_reason=action.reason, proposer=request.proposer,
                  result=f"{request.request_id} ({request.action.type} by {request.proposer}) {decision}{wait}",
                  **fields)
        return await self.release()

    async def release(self, *, force: bool = False) -> bool:
        """Apply the approved actions now due (`Gatekeeper.due`), in proposal order; True when one
        was a finish, after which every request proposed later is void (`Gatekeeper.void_after`)."""
        finished = False
        for request in self.requests.due(force=force):
            if request.status != "approved":  # voided by a finish applied before it in this loop
                continue
            request.applied = True
            if request.action.type == "edit_result" and request.seq < self.editor_seq:
                self.emit(SYSTEM, REQUEST_SUPERSEDED, "info", request_id=request.request_id,
                          signatory=request.signatory, proposer=request.proposer, args={"action": "edit_result"},
                          result=f"{request.request_id} (edit_result by {request.proposer}) superseded: an edit "
                                 "proposed after it is in the editor")
                continue
            if await self.apply(request.action, request.proposer, request_id=request.request_id,
                                signatory=request.signatory, decision="approved",
                                decision_reason=request.reason, proposer=request.proposer):
                finished = True
                self.void_after(request)
        return finished

    def void_after(self, finish: Request | None) -> None:
        """A finish took effect: nothing proposed after it lands, whatever its signatory does later."""
        self.finished = True
        for request in self.requests.void_after(finish):
            self.emit(SYSTEM, REQUEST_VOIDED, "info", request_id=request.request_id, signatory=request.signatory,
                      proposer=request.proposer, args={"action": request.action.type, "finish": finish.request_id
                                                       if finish is not None else None},
                      result=f"{request.request_id} ({request.action.type} by {request.proposer}) void: proposed "
                             "after a finish that has taken effect")

    async def apply(self, action: Action, actor: str, **fields: Any) -> bool:
        """Make `action` take effect as `actor`'s and log it; True for a finish."""
        args = action.args()
        if action.type == "send_message":
            message = self.ws.chat.post(actor, action.text, to=action.to)
            to = ",".join(message.to) if message.to else "all"
            self.emit(actor, action.type, "ok", args=args, result=f"message #{message.index} sent to {to}",
                      message_index=message.index, **fields)
        elif action.type == "execute_code":
            cell = await self.ws.execute(action.code, author=actor)
            if self.fork is not None:
                cell = self.fork.checked_cell(self.ws, cell)
            self.emit(actor, action.type, "ok" if cell.status == "ok" else "error", args=args,
                      result=clip(f"cell {cell.index} {cell.status}: {cell_output(cell)}", RESULT_CHARS),
                      cell_index=cell.index, **fields)
            if cell.restarted:
                self.emit(SYSTEM, "kernel_restart", "info", args={"cell": cell.index, "cell_status": cell.status},
                          result=f"kernel restarted while running cell {cell.index} ({cell.status}); "
                                 "earlier successful cells were replayed")
        elif action.type == "edit_result":
            # when it was proposed: a held edit's request, else now (`release` supersedes older ones)
            held = self.requests.requests.get(fields.get("request_id") or "")
            self.editor_seq = max(self.editor_seq, held.seq if held is not None else len(self.log.events))
            version = self.ws.editor.write(actor, action.text)
            self.emit(actor, action.type, "ok", args=args, result=f"editor version {version.index}",
                      editor_version=version.index, **fields)
        elif action.type == "finish":
            open_now = self.open_requests()
            after = f" once the {open_now} open requests are decided" if open_now and not self.closing else ""
            self.emit(actor, action.type, "ok", args=args, result=f"finished: the editor text is submitted{after}",
                      **fields)
            if fields.get("request_id") is None:  # an ungated finish: nothing can be proposed after it
                self.finished = True
            return True
        return False

    def close(self, ended_by: EndedBy, detail: dict[str, Any], calls: tuple[CallRecord, ...] = ()) -> None:
        """Expire open requests and updates and log the end (with the error and the calls behind it, if any)."""
        expired: list[object] = [*self.structure.expire(self), *self.requests.expire_pending()]
        for request in (r for r in expired if isinstance(r, Request)):
            self.emit(SYSTEM, "request_expired", "info", request_id=request.request_id,
                      signatory=request.signatory, proposer=request.proposer,
                      args={"action": request.action.type, "decision": "undecided"},
                      result=f"{request.request_id} ({request.action.type} by {request.proposer}) "
                             "undecided: still open when the session ended")
        rule = {"termination": self.spec.settings.termination, "budget_side": self.budget_side,
                "expired": len(expired)}
        self.emit(SYSTEM, "session_end", "error" if ended_by in ("error", "provider_error") else "info",
                  args={"ended_by": ended_by, "final_hypothesis": self.ws.editor.text, "rounds": self.round,
                        **rule, **detail},
                  result=detail.get("error", f"ended by {ended_by}"), llm_calls=calls)
