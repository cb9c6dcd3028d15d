"""Co-Gym event logs written as its TaskEnvNode writes them (collaborative_gym/nodes/task_env.py)."""

from __future__ import annotations

import json
from pathlib import Path


def line(role: str, action: str, status: str = "succeeded", kind: str = "collaborative", t: int = 0) -> str:
    """One event_log.jsonl line as collaborative_gym/nodes/task_env.py writes it."""
    return json.dumps({"role": role, "timestamp": f"2025-03-01 10:00:{t:02d}", "action": action,
                       "action_status": status, "action_type": kind, "current_chat_history": [],
                       "current_observation": {"jupyter_history": "", "result_editor": ""}})


def write_session(root: Path, name: str, lines: list[str]) -> Path:
    folder = root / f"env_{name}"
    folder.mkdir(parents=True)
    (folder / "event_log.jsonl").write_text("\n".join(lines) + "\n")
    return folder
