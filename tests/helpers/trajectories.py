"""Small constructed trajectories for the evaluation metrics' hand-computed fixtures.

`Trajectory` logs events exactly as the session engine does (see `session/engine.py`): a
gated action is a `pending` event by the proposer, then the signatory's `approve`/`reject`
event, then (if approved) the application event logged as the proposer's with the gate
fields; cells land in the snapshot with their status; expired requests are logged by the
system at the end. Each helper returns the event it logged, so a test can name its item.
"""

from __future__ import annotations

from typing import Any

from colabkit.session.events import CLOSING_PASS, SYSTEM, Event, GateRuleRef
from colabkit.workspace import CellResult, EditorVersion, IsolationReport, Limits, WorkspaceSnapshot


class Trajectory:
    def __init__(self, team: tuple[str, ...] = ("ai", "D", "R"), session_id: str = "s1") -> None:
        self.team = team
        self.session_id = session_id
        self.events: list[Event] = []
        self.cells: list[CellResult] = []
        self.versions: list[EditorVersion] = []
        self.round = 1
        self._requests: dict[str, tuple[str, str, dict[str, Any]]] = {}

    def _emit(self, participant: str, action: str, status: str, *, phase: str = "task", **fields: Any) -> Event:
        event = Event(session_id=self.session_id, seq=len(self.events), phase=phase,  # type: ignore[arg-type]
                      round=self.round, participant=participant, action=action, status=status,  # type: ignore[arg-type]
                      time=float(len(self.events)), **fields)
        self.events.append(event)
        return event

    def next_round(self) -> None:
        self.round += 1

    def start(self) -> Event:
        return self._emit(SYSTEM, "session_start", "info", args={"team": list(self.team)})

    def say(self, sender: str, text: str, **gate: Any) -> Event:
        index = sum(1 for e in self.events if e.message_index is not None)
        return self._emit(sender, "send_message", "ok", args={"text": text, "to": None}, result="sent",
                          message_index=index, **gate)

    def build_step(self, who: str) -> Event:
        return self._emit(who, "propose_memory", "ok", phase="build", args={"text": "memory"})

    def run(self, author: str, code: str, output: str = "", status: str = "ok", images: int = 0, **gate: Any) -> Event:
        index = len(self.cells)
        self.cells.append(CellResult(index=index, author=author, code=code, status=status,  # type: ignore[arg-type]
                                     output=output, error=None if status == "ok" else "Error",
                                     images=tuple("png" for _ in range(images)), truncated=False,
                                     restarted=False, duration_s=0.1))
        return self._emit(author, "execute_code", "ok" if status == "ok" else "error", args={"code": code},
                          result=f"cell {index} {status}: {output}", cell_index=index, **gate)

    def edit(self, author: str, text: str, **gate: Any) -> Event:
        self.versions.append(EditorVersion(index=len(self.versions), author=author, text=text, time=0.0))
        return self._emit(author, "edit_result", "ok", args={"text": text}, result="editor version",
                          editor_version=len(self.versions) - 1, **gate)

    def wait(self, who: str) -> Event:
        return self._emit(who, "wait", "ok")

    def failed(self, who: str, action: str) -> Event:
        return self._emit(who, action, "failed_step", result="invalid")

    def request(self, proposer: str, action: str, signatory: str, note: str = "", **args: Any) -> str:
        request_id = f"req-{len(self._requests) + 1}"
        self._requests[request_id] = (proposer, action, args)
        rule = GateRuleRef(action=action, scope="all", note=note, signatory=signatory)
        self._emit(proposer, action, "pending", args=args, request_id=request_id, signatory=signatory,
                   gate_rule=rule, result=f"held as {request_id}")
        return request_id

    def decide(self, signatory: str, request_id: str, approve: bool, reason: str = "",
               output: str = "", closing: bool = False) -> Event:
        """The decision event, then (approved) the action taking effect as the proposer's;
        `closing`: made in the engine's closing pass (marked as the engine marks it)."""
        proposer, action, args = self._requests[request_id]
        decision = "approved" if approve else "rejected"
        gate = {"request_id": request_id, "signatory": signatory, "decision": decision,
                "decision_reason": reason, "proposer": proposer}
        event = self._emit(signatory, "approve" if approve else "reject", decision,
                           args={"request_id": request_id, "reason": reason, **({CLOSING_PASS: True} if closing else {})},
                           result=f"{request_id} ({action} by {proposer}) {decision}", **gate)
        if approve:
            if action == "execute_code":
                self.run(proposer, args["code"], output, **gate)
            elif action == "edit_result":
                self.edit(proposer, args["text"], **gate)
            elif action == "send_message":
                self.say(proposer, args["text"], **gate)
        return event

    def end(self) -> Event:
        decided = {e.request_id for e in self.events if e.action in ("approve", "reject")}
        for request_id, (proposer, action, _) in self._requests.items():
            if request_id not in decided:
                self._emit(SYSTEM, "request_expired", "info", request_id=request_id, proposer=proposer,
                           args={"action": action}, result="never decided")
        return self._emit(SYSTEM, "session_end", "info", args={"ended_by": "finish"})

    @property
    def hypothesis(self) -> str:
        return self.versions[-1].text if self.versions else ""

    def snapshot(self) -> WorkspaceSnapshot:
        report = IsolationReport(level="none", network_isolated=False, data_read_only=True, env_allowlisted=True)
        return WorkspaceSnapshot(isolation=report, limits=Limits(), data_files=("capital.csv",),
                                 cells=tuple(self.cells), messages=(), editor_versions=tuple(self.versions),
                                 events=(), files=())
