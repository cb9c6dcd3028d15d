"""Co-Gym real-condition trajectories as colabkit tables, so people elsewhere can be fingerprinted.

Co-Gym (SALT-NLP/collaborative-gym) writes one folder per session (`env_<session id>/` on its
real-condition server) holding `event_log.jsonl`, written by `TaskEnvNode.add_record_to_event_log`:
one JSON line per logged action with `role` ("agent", "user_<id>" for a real user, or
"environment"), `timestamp` (local time, "%Y-%m-%d %H:%M:%S"), `action` (the raw action string,
e.g. `SEND_TEAMMATE_MESSAGE(message=...)`), `action_status` ("succeeded", or "failed (action_error:
...)"), `action_type` ("collaborative" or "environment"), and full copies of the chat and the
observation. Waits and thoughts are not logged.

`cogym_tables` reads such folders (or files) into an events table and a sessions table with
the columns `fingerprints` reads, so the same features come out. What the mapping assumes:
- the user is the seat `seat` (default "R": Co-Gym's simulated user gets the task's domain
  knowledge, which the study gives R); the agent is "ai"; "environment" is "system";
- actions: SEND_TEAMMATE_MESSAGE -> send_message, EXECUTE_JUPYTER_CELL -> execute_code,
  EDITOR_UPDATE -> edit_result, FINISH -> finish, REQUEST_TEAMMATE_CONFIRM -> a pending request
  (logged as the held action, pending) signed by the other side, ACCEPT_/REJECT_CONFIRMATION -> approve / reject, WAIT_TEAMMATE_CONTINUE
  -> wait; anything else keeps its name in lower case (a step, in no feature's numerator);
- a failed step ("failed ...") is an error; a cell whose Python raised but ran is "succeeded"
  in Co-Gym, so `failure_reaction` sees fewer failures than colabkit logs;
- there are no rounds: each logged event is its own round, so "this round or the last" in
  `reply_share` means "the event just before";
- there is no private briefing in the log: `disclosure_share` is missing.
A line that is not JSON or lacks `role`/`action` is a `ColabkitError` naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from colabkit.errors import ColabkitError

EVENT_LOG = "event_log.jsonl"
VARIANT = "cogym-real"
_CALL = re.compile(r"^([A-Z_]+)\((.*)\)$", re.DOTALL)
_ACTIONS = {"SEND_TEAMMATE_MESSAGE": "send_message", "EXECUTE_JUPYTER_CELL": "execute_code",
            "EDITOR_UPDATE": "edit_result", "FINISH": "finish", "ACCEPT_CONFIRMATION": "approve",
            "REJECT_CONFIRMATION": "reject", "REQUEST_TEAMMATE_CONFIRM": "request", "WAIT_TEAMMATE_CONTINUE": "wait"}
_PAYLOAD = {"send_message": "message=", "execute_code": "code=", "edit_result": "text="}


def _participant(role: str, seat: str) -> str:
    return "ai" if "agent" in role else seat if "user" in role else "system"


def _event(line: dict, seq: int, session_id: str, seat: str) -> dict:
    role, raw, status = line["role"], str(line["action"]), str(line.get("action_status", ""))
    who = _participant(role, seat)
    match = _CALL.match(raw.strip())
    name, body = (match.group(1), match.group(2)) if match else (raw.strip(), "")
    action = _ACTIONS.get(name, name.lower())
    ok = "ok" if status.startswith("succeeded") else "error"
    row = {"session_id": session_id, "seq": seq, "phase": "task", "round": seq, "participant": who,
           "action": action, "status": ok, "args_json": "{}", "signatory": None, "decision": None,
           "decision_reason": None, "actor_kind": "system" if who == "system" else "person" if who == seat else "model",
           "time": pd.Timestamp(line["timestamp"]).timestamp() if line.get("timestamp") else float(seq)}
    if action in _PAYLOAD:
        text = body.removeprefix(_PAYLOAD[action]).strip().strip("\"'")
        row["args_json"] = json.dumps({"text" if action != "execute_code" else "code": text, "to": None})
    elif action == "request":  # the held action, pending the other side's signature
        held = _CALL.match(body.split("pending_action=", 1)[-1].strip())
        row.update(action=_ACTIONS.get(held.group(1), held.group(1).lower()) if held else action, status="pending",
                   signatory="ai" if who == seat else seat)
    elif action in ("approve", "reject"):
        row.update(decision="approved" if action == "approve" else "rejected", decision_reason="",
                   status="approved" if action == "approve" else "rejected")
    return row


def _read(path: Path, seat: str) -> tuple[list[dict], dict]:
    log = path / EVENT_LOG if path.is_dir() else path
    session_id = (path if path.is_dir() else path.parent).name.removeprefix("env_")
    rows: list[dict] = []
    query = ""
    for number, text in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            if not isinstance(line, dict) or "role" not in line or "action" not in line:
                raise ValueError("not a Co-Gym event (needs role and action)")
        except ValueError as exc:
            raise ColabkitError(f"{log}:{number}: {exc}") from None
        found = re.search(r"query=(.*)\)$", str(line["action"]), re.DOTALL) if line["role"] == "environment" else None
        query = found.group(1).strip() if found and not query else query
        rows.append(_event(line, len(rows), session_id, seat))
    record = {"session_id": session_id, "task_id": f"cogym:{query[:80]}" if query else f"cogym:{session_id}",
              "variant": VARIANT, "seed": 0, "briefings_json": "{}",
              "models_json": json.dumps({"ai": {"model": "cogym-agent"}, seat: {"model": "person"}})}
    return rows, record


def cogym_tables(paths: Iterable[Path | str], seat: str = "R") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(events, sessions) of the Co-Gym session folders or `event_log.jsonl` files in `paths`;
    a folder without an event log is searched for `env_*` session folders."""
    logs: list[Path] = []
    for path in map(Path, paths):
        if path.is_file() or (path / EVENT_LOG).is_file():
            logs.append(path)
        elif path.is_dir():
            logs += sorted(p for p in path.iterdir() if (p / EVENT_LOG).is_file())
        else:
            raise ColabkitError(f"no Co-Gym trajectory at {path}")
    events, sessions = [], []
    for log in logs:
        rows, record = _read(log, seat)
        events += rows
        sessions.append(record)
    return pd.DataFrame(events), pd.DataFrame(sessions)
