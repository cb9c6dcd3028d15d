"""The engine's side of a fork: verify the replayed prefix, then apply the change at N.

A fork runs the ordinary engine (`run_session(..., fork=ForkReplay(...))`) from the start:
the parent's spec, a fresh kernel over the task's data, and a gateway whose answers before
N come only from the parent's cache (the runner's `ForkCache`). Given the same answers the
engine's state at N is the parent's: the scheduler's seeded round order, the budgets, the
gates, the scratchpads, the kernel's variables are all rebuilt by doing the same things
again, so there is no second engine and no state snapshot to keep in sync with it. What the
engine cannot promise (the kernel computing the same outputs) is checked here:

- every event before N is compared with the parent's (`replay_view`: wall-clock fields and
  per-call cache bookkeeping left out, the prompt hashes kept); a difference stops the fork;
- every cell before N is compared with the logged cell after `normalise` (object addresses,
  the workspace's random folder names). Strict: a mismatch stops the fork, naming the cell
  and both outputs. Lenient: it is recorded and the logged cell is shown to the team instead,
  so the participants see what they saw in the parent and the prefix's prompts stay the
  same; only the kernel's state may differ, which the record's `mismatches` says.

At N (the first turn starting with N events logged) the hook switches the gateway to fresh
answers (`on_fork_point`), makes the continuation's seed the spec's seed (later rounds'
order and every later model call's sample), and applies the change (`changes` module).
The rest of the round N falls in keeps the parent's order: it was drawn when the round
began. Nothing else carries state from the parent: the round order and each call's sample
are functions of (seed, round) and (seed), and wall-clock times are never compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.session.actions import StepAction, StepSchema
from colabkit.session.events import SYSTEM, Event, EventSink
from colabkit.session.fork.changes import CellMismatch, ForkPoint, ReplayReport, describe
from colabkit.session.fork.members import default_twin, switch_off
from colabkit.session.hooks import SessionState
from colabkit.team import MemoryRecord, persona
from colabkit.workspace import CellResult
from colabkit.workspace.output import strip_ansi

if TYPE_CHECKING:
    from colabkit.workspace import Workspace

_VOLATILE = ((re.compile(r"0x[0-9a-fA-F]{6,}"), "0x?"),  # object reprs
             (re.compile(r"colabkit-ws-[A-Za-z0-9_]+"), "colabkit-ws-?"),  # the workspace's temporary folders
             (re.compile(r"/ck-[A-Za-z0-9_]+"), "/ck-?"))
_CALL_FIELDS = ("caller", "model", "prompt_hash", "prompt_tokens", "completion_tokens", "error", "output_mode")
_CLOSING = ("request_expired", "session_end")
_SHOWN = 300  # characters of each output quoted in a divergence message


class ForkDivergence(ColabkitError):
    """The replayed prefix is not the logged one (strict mode, or an event that differs)."""


def normalise(text: str) -> str:
    """Cell output as compared: no colour codes, no trailing spaces, volatile names masked."""
    text = "\n".join(line.rstrip() for line in strip_ansi(text).strip().splitlines())
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


def cell_text(cell: CellResult) -> str:
    """What a cell came to, as compared: status, output and error."""
    return normalise(f"[{cell.status}]\n{cell.output}\n{cell.error or ''}")


def replay_view(event: Event) -> dict[str, Any]:
    """An event as a replay must reproduce it: without its session id and wall-clock time, and
    each model call reduced to what it asked and got (not whether the cache answered it)."""
    row = event.model_dump(mode="json", exclude={"session_id", "time"})
    row["llm_calls"] = [{k: call.get(k) for k in _CALL_FIELDS} for call in row["llm_calls"]]
    return row


class ForkReplay:
    """The hook `run_session(fork=...)` calls: see the module docstring.

    `parent_events` and `parent_cells` are the parent's log and its snapshot's cells;
    `on_fork_point` is called once, when N is reached, before the change is applied.
    """

    def __init__(self, point: ForkPoint, parent_events: Sequence[Event], parent_cells: Sequence[CellResult], *,
                 on_fork_point: Callable[[], None] = lambda: None) -> None:
        self.point = point
        self.session_id = point.session_id
        self._parent = list(parent_events)
        self._cells: Mapping[int, CellResult] = {c.index: c for c in parent_cells}
        self._on_fork_point = on_fork_point
        self.reached = False
        self.divergence: str | None = None
        self.mismatches: list[CellMismatch] = []
        self.cells_checked = 0
        self._override: tuple[str, StepSchema] | None = None
        self._absent: set[str] = set()  # seats emptied at the fork point (`RemoveMember`)

    # -- called by the engine ------------------------------------------------------------
    def before_turn(self, session: SessionState) -> None:
        """At the first turn that starts with N events logged: switch to the continuation."""
        logged = len(session.log.events)
        if self.reached or logged < self.point.at:
            return
        if logged > self.point.at:  # fork points are checked before the run: a replay bug
            self._diverge(f"the replay passed event {self.point.at} without a turn starting there")
        self.reached = True
        self._on_fork_point()
        self._apply(session)

    def seated(self, participant: str) -> bool:
        """Whether `participant` takes turns: not once a `remove_member` fork emptied its seat."""
        return participant not in self._absent

    @property
    def step_pending(self) -> bool:
        """A step change whose participant never got its turn after N (a replay bug if so)."""
        return self._override is not None

    def step_for(self, participant: str) -> StepSchema | None:
        """The step a step change puts in place of `participant`'s model answer (once)."""
        if self._override is None or self._override[0] != participant:
            return None
        step, self._override = self._override[1], None
        return step

    def checked_cell(self, ws: Workspace, cell: CellResult) -> CellResult:
        """A prefix cell compared with the logged one (see the module docstring)."""
        if self.reached:
            return cell
        logged = self._cells.get(cell.index)
        self.cells_checked += 1
        if logged is None:
            self._diverge(f"the replay ran cell {cell.index}, which the parent's snapshot does not have")
        if cell_text(cell) != cell_text(logged):
            if self.point.verify == "strict":
                self._diverge(f"cell {cell.index} ({cell.code[:80]!r}) replayed differently: logged "
                              f"{_quote(cell_text(logged))}, replayed {_quote(cell_text(cell))}")
            self.mismatches.append(CellMismatch(cell=cell.index, logged=cell_text(logged),
                                                replayed=cell_text(cell)))
        # Equal up to volatile names, or lenient: the team sees the logged cell, as in the parent.
        shown = logged.model_copy(update={"time": cell.time, "duration_s": cell.duration_s})
        ws.cells[cell.index] = shown
        return shown

    # -- the prefix's events ---------------------------------------------------------------
    def verifying(self, sink: EventSink) -> EventSink:
        """`sink`, with each event before N checked against the parent's first."""
        return _VerifyingSink(self, sink)

    def check_event(self, event: Event) -> None:
        if self.divergence is not None or event.seq >= self.point.at:
            return
        mine, theirs = replay_view(event), replay_view(self._parent[event.seq])
        if mine == theirs:
            return
        fields = sorted(k for k in mine if mine[k] != theirs.get(k))
        self.divergence = (f"fork {self.session_id} of {self.point.parent_id}: event {event.seq} replayed "
                           f"differently in {', '.join(fields)}: logged {_quote(str({k: theirs.get(k) for k in fields}))}, "
                           f"replayed {_quote(str({k: mine[k] for k in fields}))}")
        if event.action not in _CLOSING:  # a session already ending (e.g. on a cache miss) just ends
            raise ForkDivergence(self.divergence)

    def report(self, prefix_calls: int) -> ReplayReport:
        return ReplayReport(prefix_events=self.point.at, prefix_calls=prefix_calls,
                            cells_checked=self.cells_checked, mismatches=tuple(self.mismatches))

    def _diverge(self, message: str) -> NoReturn:
        self.divergence = self.divergence or f"fork {self.session_id} of {self.point.parent_id}: {message}"
        raise ForkDivergence(self.divergence)

    # -- the change --------------------------------------------------------------------------
    def _apply(self, session: SessionState) -> None:
        change, at = self.point.change, self.point.at
        event = self._parent[at]
        spec = session.spec.model_copy(update={"seed": self.point.seed})
        fields: dict[str, Any] = {}
        if change.kind == "replace_message":
            to = event.args.get("to") if change.to is None else change.to
            self._step(event, "send_message", change.text or event.args.get("text", ""), _to_field(to))
        elif change.kind == "drop_message":
            self._step(event, "wait", "", "")
        elif change.kind == "flip_decision":
            self._step(event, "reject" if event.action == "approve" else "approve", change.reason,
                       event.request_id or str(event.args.get("request_id", "")))
        elif change.kind == "insert_message":
            to = None if change.to in (None, "all") else tuple(change.to)
            message = session.ws.chat.post(change.sender, change.text, to=to)
            fields["message_index"] = message.index
        elif change.kind == "model":
            spec = spec.model_copy(update={"models": {**spec.models, change.role: change.model}})
        elif change.kind == "persona":
            current = session.variant.persona(change.role)
            prompt = change.prompt or persona(change.role).prompt
            version = change.version or (f"fork-{sha256_hex(prompt)[:8]}" if change.prompt else persona(change.role).version)
            new = current.model_copy(update={"prompt": prompt, "version": version})
            others = tuple(p for p in session.variant.personas if p.id != change.role)
            session.variant = session.variant.model_copy(update={"personas": (*others, new)})
            spec = spec.model_copy(update={"variant": session.variant})
        elif change.kind == "remove_member":
            self._absent.add(change.role)
        elif change.kind == "structure_off":  # switched off below, once the change is logged
            spec = spec.model_copy(update={"variant": default_twin(session.variant)})
        elif change.kind == "memory" and (frozen := session.board.memory) is not None:
            board = session.board
            board.memory = MemoryRecord.model_validate({**frozen.model_dump(), **change.slots})
            if board.living is not None:  # a Dynamic team's memory: the change amends its current version
                board.living.current = MemoryRecord.model_validate({**board.living.current.model_dump(),
                                                                    **change.slots})
        session.spec = spec
        if change.kind != "none":
            session.emit(SYSTEM, "fork_change", "info", args={"parent": self.point.parent_id, "at": at,
                                                               "change": change.model_dump(mode="json")},
                         result=f"fork of {self.point.parent_id} at event {at}: {describe(change)}", **fields)
        if change.kind == "structure_off":
            switch_off(session, at)

    def _step(self, event: Event, action: StepAction, content: str, to: str) -> None:
        # model_construct: the researcher's text is not bounded by the model's answer grammar.
        step = StepSchema.model_construct(thought=event.thought or "", action=action, content=content, to=to)
        self._override = (event.participant, step)


class _VerifyingSink:
    def __init__(self, replay: ForkReplay, sink: EventSink) -> None:
        self.replay, self.sink = replay, sink

    def emit(self, event: Event) -> None:
        self.sink.emit(event)
        self.replay.check_event(event)


def _to_field(to: object) -> str:
    """Addressees as `StepSchema.to` writes them."""
    if to in (None, "all") or not to:
        return "all"
    return ",".join(to) if isinstance(to, (list, tuple)) else str(to)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
