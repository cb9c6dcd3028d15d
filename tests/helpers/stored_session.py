"""A stored Scaffolded-DR session recorded with scripted participants and a real kernel.

Trajectory rendering and the explorer notebook need a session folder with every kind of
event: the memory build, code cells by two people, chat, a gated edit and its approval, a
finish. The scripted model (mechanics only) plays all three participants; the kernel is real.
"""

from __future__ import annotations

import json
from pathlib import Path

from colabkit.llm import ModelConfig
from colabkit.session import SessionSpec
from colabkit.session.scheduler import round_order
from colabkit.tasks import load_tasks
from colabkit.team import variant
from helpers.scripted import use_scripted

TASK_ID = "demo_archaeology/0/0"
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."
SLOTS = {"expertise": "D knows the columns; R knows the periods", "responsibility": "R checks the answer",
         "plan": "AI explores, D checks counts, R signs the result", "evidence_standards": "counts by century"}
# The build protocol's ratification round: each human accepts or names one amendment.
RATIFY = [{"reply": {"decision": "accept"}}]
WAIT = json.dumps({"thought": "nothing for me now", "action": "wait"})


def say(action: str, content: str = "", to: str = "", thought: str = "next step") -> dict:
    return {"thought": thought, "action": action, "content": content, "to": to}


def record_session(spec, task, out):
    from colabkit.runner import record_session as record

    return record(spec, task, out=out)


def ai_first_seed(team: tuple[str, ...] = ("ai", "D", "R")) -> int:
    """A seed whose round order puts the AI first in rounds 1-5 (the scripts assume it)."""
    return next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, 6)))


def scaffolded_scripts() -> dict[str, list]:
    """Each participant's answers (JSON-serialisable) for the session described above."""
    return {
        "ai": [{**SLOTS, "gates": []},
               {**SLOTS, "gates": [{"action": "edit_result", "signatory": "R"}]},
               say("execute_code", "print(6 * 7)", thought="AI-THOUGHT: count the hoards first"),
               say("edit_result", HYPOTHESIS, thought="AI-THOUGHT: write it down"),
               say("send_message", "R, please sign the hypothesis.", "R"),
               say("finish", "done", thought="AI-THOUGHT: approved, submit")],
        "D": [{**SLOTS, "gates": []}, *RATIFY, say("execute_code", "print('D-CELL')", thought="D-THOUGHT: check the data")],
        "R": [{**SLOTS, "gates": []}, *RATIFY, say("send_message", "Yes, the 12th century fits.", "ai", thought="R-THOUGHT"),
              say("approve", "matches the counts", "req-1", thought="R-THOUGHT: the counts support it")],
    }


def record_scaffolded_session(out: Path) -> Path:
    """Record the session into `out`; return its folder."""
    use_scripted(scaffolded_scripts(), default=WAIT)
    var = variant("scaffolded-dr")
    spec = SessionSpec(task_id=TASK_ID, variant=var, seed=ai_first_seed(var.team),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    return record_session(spec, load_tasks().get(TASK_ID), out)
