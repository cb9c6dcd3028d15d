"""The shipped variants are the same sessions as before the structures became plugins (issue 36
item 2): every message sent to the model, every event (without its wall-clock fields), each
session's id and end, on the audit's scripted double (`helpers.golden`), equal to the record the
engine wrote before the refactor (`tests/fixtures/golden/variants.json.gz`)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from helpers.golden import load, played, record

from colabkit.runner.audit import player


def _first_difference(old: object, new: object, path: str = "") -> str:
    if type(old) is not type(new):
        return f"{path}: {type(old).__name__} vs {type(new).__name__}"
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{path}.{key}: only in {'the record' if key in old else 'this run'}"
            if old[key] != new[key]:
                return _first_difference(old[key], new[key], f"{path}.{key}")
    if isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
        return f"{path}: {len(old)} items vs {len(new)}"
    return f"{path}: {json.dumps(old)[:300]}\n   vs {json.dumps(new)[:300]}"


def test_every_registered_variant_sends_the_same_prompts_and_logs_the_same_events():
    golden, now = load(), json.loads(json.dumps(record(), sort_keys=True))
    assert set(now) == set(golden)
    for key in sorted(golden):
        assert now[key] == golden[key], f"{key}: {_first_difference(golden[key], now[key])}"


def test_the_record_exercises_every_structure():
    """The scripts reach what each structure does: the build, held requests and their decisions,
    memory updates applied and dropped, the closing pass, a failed step."""
    actions = Counter(e["action"] for run in load().values() for e in run["events"])
    statuses = Counter(e["status"] for run in load().values() for e in run["events"])
    for action in ("memory_frozen", "propose_memory", "ratify_memory", "amend_memory", "approve", "reject", "closing_pass",
                   "propose_memory_update", "memory_updated", "memory_update_dropped", "finish", "edit_result"):
        assert actions[action] > 0, action
    assert statuses["pending"] > 0 and statuses["failed_step"] > 0
    assert len({run["session_id"] for run in load().values()}) == len(load())


class _FirstRatificationLate(player.PolicyDouble):
    """The double, answering the first ratification request to arrive 0.1 s late: the other
    member's, asked at the same time, reaches the model first (as under CPU load)."""

    delayed = False

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        if not self.delayed and player.schema_of(kwargs["optional_params"])[0].startswith("Ratification"):
            self.delayed = True
            await asyncio.sleep(0.1)
        return await super().acompletion(*args, **kwargs)


def test_concurrent_calls_are_recorded_in_the_order_the_session_issued_them(monkeypatch):
    """The build asks both humans to ratify at once; the recorded calls keep the seat order
    whichever answer comes first, so the golden comparison cannot flake on timing."""
    monkeypatch.setattr(player, "PolicyDouble", _FirstRatificationLate)
    now = played("memory-dr", "full")
    ratifying = [c["role"] for c in now["calls"] if c["params"]["response_format"]["json_schema"]["name"]
                 .startswith("Ratification")]
    logged = [e["participant"] for e in now["events"] if e["action"] == "ratify_memory"]
    assert len(ratifying) == 2 and ratifying == logged
    assert now == load()["memory-dr/full"]
