"""A Default-DR session whose truth is known by construction, and its contribution replays.

One policy plays every seat: R posts the answer to the whole team in its first turn, D always
waits, and the AI writes the answer into the editor once it sees it in the chat (else it runs a
cell). So R's contribution to the delivered answer is 1 by construction and D's is 0 on every
metric. Used by the contribution tests and the ablations notebook's contributions section.
"""

from __future__ import annotations

from pathlib import Path

from colabkit.llm import ModelConfig
from colabkit.session import SessionSettings, SessionSpec
from colabkit.tasks import load_tasks
from colabkit.team import variant
from helpers.scripted import use_scripted
from helpers.stored_session import WAIT, record_session, say

TASK_ID = "demo_archaeology/0/0"
ANSWER = "Axes peak in hoards of the 12th century BCE."


def answer_policy(model: str, messages: list[dict]) -> dict | str:
    """R tells everyone the answer once; D waits; the AI writes what it read in the chat, else runs a cell."""
    view = str(messages[-1].get("content", ""))
    if model == "R":
        return WAIT if "ANSWER:" in view else say("send_message", f"ANSWER: {ANSWER}", "all")
    if model == "ai":
        if "ANSWER:" in view and "editor version" not in view:
            return say("edit_result", ANSWER)
        return say("execute_code", "print(6 * 7)")
    return WAIT


def record_answer_parent(out: Path) -> Path:
    """The Default-DR parent session, stored under `out`; its folder."""
    use_scripted({}, default=answer_policy)
    var = variant("default-dr")
    spec = SessionSpec(task_id=TASK_ID, variant=var, seed=5, settings=SessionSettings(action_budget=4),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    return record_session(spec, load_tasks().get(TASK_ID), out)


def record_replays(parent: Path, out: Path, seeds: list[int], say_cost: list[str] | None = None) -> Path:
    """Every member's replays of `parent` from its first task step under `seeds`, with controls, into `out`."""
    from colabkit.runner import contributions

    use_scripted({}, default=answer_policy)
    jobs = contributions.plan([parent], seeds)
    contributions.run(jobs, out=out, say=None if say_cost is None else say_cost.append)
    return out
