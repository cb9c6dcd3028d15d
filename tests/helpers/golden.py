"""The golden record of the shipped variants: every message sent to the model and every event,
played on the audit's scripted double, recorded before the structures became plugins.

`record()` plays `SCENARIOS` in every registered variant (`colabkit.team.VARIANTS`) through
`run_session` (`colabkit.runner.audit.player.play`) and returns, per variant and scenario,
the session id, each call as sent (role, messages, parameters but the volatile ones) and the
events without their wall-clock fields (`comparable`). `tests/test_session_golden.py` compares
it with `tests/fixtures/golden/variants.json.gz`, written by the engine before issue 36's
item 2; `python tests/helpers/golden.py` rewrites the file (only ever from an engine whose
prompts are meant to change, with the reason in the commit).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from colabkit.runner import build_spec
from colabkit.runner.audit.player import play, scenario_spec
from colabkit.runner.audit.scenario import Policy, Scenario
from colabkit.session.events import comparable
from colabkit.tasks import load_tasks
from colabkit.team import VARIANT_NAMES

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "variants.json.gz"
TASK_ID = "demo_archaeology/0/0"
_VOLATILE = ("metadata", "timeout", "api_base")


def scenarios() -> dict[str, Scenario]:
    """Three scripts: gated edits and a finish; updates, a failed step and a gated finish; the
    full profile with amendments, an AI who signs, rejections and a human's finish."""
    return {
        "gated-finish": Scenario(TASK_ID, "dr", budget=6, gates="edits", policies={
            "ai": Policy(("code:0", "edit:0", "finish"), "approve-oldest"), "D": Policy(("wait",) * 8),
            "R": Policy(("wait",) * 8, "approve-newest")}),
        "updates": Scenario(TASK_ID, "dr", budget=4, gates="edits-and-finish", policies={
            "ai": Policy(("fail", "edit:1", "code:2", "edit:0")), "D": Policy(("update", "code:0")),
            "R": Policy(("update", "msg:0"), "approve-random")}),
        "full": Scenario(TASK_ID, "dr", seed=1, budget=5, profile="full", gates="ai-signs", ratify=("amend", "amend"),
                         policies={"ai": Policy(("msg:1", "code:3", "edit:1", "wait", "finish"), "approve-oldest"),
                                   "D": Policy(("code:0", "edit:0", "update", "msg:0"), "approve-newest"),
                                   "R": Policy(("edit:1", "code:2", "finish"), "reject-oldest")}),
    }


def record() -> dict[str, Any]:
    return {f"{name}/{key}": played(name, key) for name in VARIANT_NAMES for key in scenarios()}


def played(name: str, key: str) -> dict[str, Any]:
    """Variant `name`'s run of scenario `key`, as the record keeps it."""
    scenario = scenarios()[key]
    spec = scenario_spec(build_spec(TASK_ID, name, 0), scenario)
    run = play(spec, load_tasks().get(TASK_ID), scenario)
    calls = [{"role": c["role"], "messages": c["messages"],
              "params": json.loads(json.dumps({k: v for k, v in c["params"].items() if k not in _VOLATILE},
                                              sort_keys=True, default=repr))} for c in run.calls]
    return json.loads(json.dumps({"session_id": spec.session_id, "variant_identity": spec.variant.identity(),
                                  "calls": calls, "events": comparable(list(run.events)),
                                  "ended_by": run.result.ended_by, "final": run.result.final_hypothesis},
                                 sort_keys=True))


def load() -> dict[str, Any]:
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


if __name__ == "__main__":
    data = json.dumps(record(), sort_keys=True).encode()
    FIXTURE.write_bytes(gzip.compress(data, mtime=0))
    print(f"wrote {FIXTURE} ({len(data)} bytes, {FIXTURE.stat().st_size} gzipped)", file=sys.stderr)
