"""A person plays D in scaffolded-dr on a demo task; the AI agent and R are scripted models.

Shared by the widget-driven test (the real forms, clicked from Python) and the browser test
(the same forms, clicked in JupyterLab). The AI proposes and consolidates a memory whose one
gate holds its edits until D signs; then it runs a cell, edits the result (a request to D, who
approves it at its next turn) and finishes. The person proposes, ratifies, sends a
message, approves the request (in a decision step, at its turn before its own step) and runs a
cell, in that order (`PLAN`).
"""

from __future__ import annotations

from colabkit.team import variant
from helpers.stored_session import RATIFY, SLOTS, TASK_ID, WAIT, ai_first_seed, say

VARIANT = "scaffolded-dr"
SEAT = "D"
PARTICIPANT = "p-test-1"
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."
MESSAGE = "PERSON-MSG: I will check the counts."
CODE = "print('PERSON-CELL', 6 * 7)"
APPROVAL = "PERSON-OK: matches the counts"
PLAN = ("propose_memory", "ratify_memory", "send_message", "approve", "execute_code")
GATE = {"action": "edit_result", "signatory": "D", "scope": "all", "note": "D checks"}


def seed() -> int:
    return ai_first_seed(variant(VARIANT).team)


def scripts() -> dict[str, list]:
    return {
        "ai": [{**SLOTS, "gates": [GATE]},  # D sees this proposal, its gate in words
               {**SLOTS, "gates": [GATE]},
               say("execute_code", "print('AI-CELL')"),
               say("edit_result", HYPOTHESIS),
               say("finish", "approved by D")],
        "R": [{**SLOTS, "gates": []}, *RATIFY],
    }


def models() -> dict[str, str]:
    return {"ai": "scripted/ai", "R": "scripted/R"}


DEFAULT = WAIT
__all__ = ["APPROVAL", "CODE", "DEFAULT", "HYPOTHESIS", "MESSAGE", "PARTICIPANT", "PLAN", "SEAT", "TASK_ID",
           "VARIANT", "models", "scripts", "seed", "stop_hosts"]


def stop_hosts(out) -> None:
    """Stop the session hosts serving results folder `out` (a test that failed midway leaves its
    host waiting for a person): each by the pid its host file names."""
    import json
    import os
    import signal
    import tempfile
    from pathlib import Path

    for plan_file in Path(tempfile.gettempdir()).glob("colabkit-seat-*/plan.json"):
        pid_file = plan_file.with_name("host.pid")
        try:
            if json.loads(plan_file.read_text())["out"] == str(Path(out).resolve()) and pid_file.is_file():
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError, KeyError):
            pass
