"""`colabkit audit` says what its hunt is where the hunt's lines are printed."""

from __future__ import annotations

from colabkit.cli.audit_cmd import render_explained
from colabkit.runner.audit import INVARIANTS, AuditReport, HuntReport


def report(hunt: HuntReport | None) -> AuditReport:
    return AuditReport(task_id="demo_archaeology/0/0", seed=0, variants=("single", "default-d"), allowed={},
                       findings=[], hunt=hunt)


def test_the_hunt_is_explained_just_above_its_lines():
    hunt = HuntReport(arm="", variants=("single", "default-d"), played=7, runs=12, seconds=3.0)
    lines = render_explained(report(hunt)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("hunt: 7 scenarios, 12 runs"))
    gloss = lines[at - 1]
    assert gloss.startswith("(the hunt: generated scenarios played through the real engine in every variant")
    assert "no model, no key" in gloss and "a run is one scenario in one variant" in gloss
    assert all(name in gloss for name in INVARIANTS)
    assert lines[at + 1] == "every invariant held"
    assert lines[:at - 1] == report(None).render().splitlines() + [""]  # the rest as the report renders it


def test_without_a_hunt_nothing_is_added():
    assert render_explained(report(None)) == report(None).render()
