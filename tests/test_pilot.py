"""Pilot mode (issue 44): every model call of a session, every seat and the memory build, is
answered through a queue folder (one request file per call, one answer file back) by a script,
to the session's end; the record names the pilot, never a model it stands in for."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from colabkit.llm import Gateway, ModelConfig
from colabkit.llm.pilot import QUEUE_ENV
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.tasks import load_tasks
from colabkit.team import variant

TASK = load_tasks().get("demo_archaeology/0/0")
SLOTS = {"expertise": "D knows the columns", "responsibility": "R checks the claim", "plan": "ai runs code",
         "evidence_standards": "a computed table"}


def _answer(request: dict) -> dict:
    """What the script answers: the memory's slots, an acceptance, or a step from the offered enum."""
    schema = request["schema"] or {}
    props = schema.get("properties", {})
    if "reply" in props:
        return {"reply": {"decision": "accept"}}
    if "expertise" in props:
        return {**SLOTS, **({"gates": [{"action": "edit_result", "signatory": "R"}]} if "gates" in props else {})}
    actions = props["action"]["enum"]
    open_ids = [t for t in props["to"].get("enum", []) if t.startswith(("req-", "upd-"))]
    if "approve" in actions and open_ids:
        return {"thought": "checked", "action": "approve", "content": "fine", "to": open_ids[0]}
    if request["caller"] == "ai" and "edit_result" in actions:
        return {"thought": "write it", "action": "edit_result", "content": "Axes peak in one century.", "to": ""}
    return {"thought": "nothing now", "action": "wait", "content": "", "to": ""}


def _answerer(folder: Path, stop: threading.Event, seen: list[dict]) -> None:
    """The external program: answers every request file it finds, one answer file each."""
    while not stop.is_set():
        for path in sorted(folder.glob("*.request.json")):
            answer = path.with_name(path.name.replace(".request.json", ".answer.txt"))
            if answer.exists():
                continue
            request = json.loads(path.read_text())
            seen.append(request)
            temporary = answer.with_name(answer.name + ".partial")
            temporary.write_text(json.dumps(_answer(request)))
            temporary.rename(answer)
        stop.wait(0.02)


def test_a_script_answers_a_pilot_session_through_the_queue_to_its_end(tmp_path, monkeypatch):
    folder = tmp_path / "queue"
    monkeypatch.setenv(QUEUE_ENV, str(folder))
    spec = SessionSpec(task_id=TASK.id, variant=variant("scaffolded-dr"), seed=0,
                       models={"default": ModelConfig(model="pilot/rehearsal-script", timeout=20)},
                       settings=SessionSettings(action_budget=3))
    stop, seen = threading.Event(), []
    thread = threading.Thread(target=_answerer, args=(folder, stop, seen), daemon=True)
    thread.start()
    sink = ListSink()
    try:
        result = asyncio.run(run_session(spec, TASK, gateway=Gateway(), sink=sink, workdir_root=tmp_path / "work"))
    finally:
        stop.set()
        thread.join()
    events = sink.events
    assert result.ended_by == "budget" and result.final_hypothesis == "Axes peak in one century."
    calls = [c for e in events for c in e.llm_calls]
    assert len(calls) == len(seen) == len(list(folder.glob("*.answer.txt")))  # one request and one answer per call
    assert {r["caller"] for r in seen} == {"ai", "D", "R"}
    build = [e for e in events if e.phase == "build" and e.participant != "system"]
    assert {e.action for e in build} == {"propose_memory", "consolidate_memory", "ratify_memory"}
    assert all(e.status == "ok" for e in build)
    assert any(e.action == "approve" and e.participant == "R" for e in events)  # R signed the gated edit
    assert {c.model for c in calls} == {"pilot/rehearsal-script"} and sum(c.cost for c in calls) == 0
    assert seen[0]["messages"][0]["role"] == "system" and seen[0]["schema"]["type"] == "object"
