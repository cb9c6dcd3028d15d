"""A small `make demo`-like results folder, stored and scored without a model: for the export
and the explorer's claim links.

Two variants: the Scaffolded-DR session of `stored_session` (scripted participants, real
kernel: cells, a gated edit and its approval, memory build) and a Single session written
straight to the store. Both are scored by the real scoring job (S_hyp and W) with the judge
double: the claims judge splits the hypothesis in two, and the support judge finds the one
naming 42 supported by cell 0 (whose output is 42) and the other unsupported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from colabkit.evaluation import judge_config, score_results
from helpers.judges import perfect_answer, use_judge_double
from helpers.stored import store_session
from helpers.stored_session import TASK_ID, record_scaffolded_session

CLAIMS = ["Axes are most frequent in hoards of the 12th century BCE.", "There are 42 hoards."]
SUPPORTED, UNSUPPORTED = CLAIMS[1], CLAIMS[0]


def _answer(prompt_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    if prompt_id == "hypothesis_claims":
        return {"claims": CLAIMS}
    if prompt_id == "claim_support":
        found = "42" in payload["claim"]
        return {"reason": "cell 0 prints 42" if found else "no cell shows it", "supported": found,
                "cell": 0 if found else None}
    return perfect_answer(prompt_id, payload)


def scored_results(results: Path) -> tuple[Path, Path]:
    """Write and score the two sessions under `results`; (scaffolded folder, single folder)."""
    scaffolded = record_scaffolded_session(results)
    single = store_session(results, TASK_ID, "Axes peak in the 12th century BCE.", variant_name="single")
    use_judge_double(fallback=_answer)
    report = score_results(results, metrics=["s_hyp", "work"], judge=judge_config("judgedouble/scripted"),
                           sanity_tasks=1)
    assert report.scored == 4 and not report.stopped, report
    return scaffolded, single
