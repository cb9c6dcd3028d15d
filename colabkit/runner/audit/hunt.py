"""The hunting audit: many generated scenarios played in an experiment arm's variants, each
checked against the invariants (`invariants`, `probe`), a violation shrunk to a minimal one.

For each scenario (`scenario.scenarios`, drawn by `hypothesis`) the variants of the arm
whose team is the scenario's (with the single agent, and for a team of several the
one-seat Defaults of its seats, so a seat is compared across compositions) are played
through the engine (`player.play`, the double over HTTP: `wire`) and checked, each variant's
whole trace against its Default twin's first (`trace.same_trace`); the same-rendering probe
(`probe.same_rendering`) renders the scenario's history in every variant of the arm. The
issue's known failure patterns (`known_scenarios`) are played first, as explicit examples, and
again by each team of declared seats in the arm (`seated`); then `examples` generated ones
(drawing the arm's teams too); with `real`, the first known scenario is also played on a real
kernel and the task's real data.

Fail closed: a variant with a seat that acted in none of its runs or probes was checked for
nothing, and the hunt says so in one error line rather than pass (`unplayed`).

When a scenario violates an invariant, `hypothesis` shrinks it (playing only the variants
involved, within `shrink_seconds`) to a minimal scenario that still violates one, and the
report prints that scenario, the invariants it breaks and the variant pairs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.runner.audit.invariants import check_all, is_gate_twin
from colabkit.runner.audit.player import play, scenario_spec
from colabkit.runner.audit.probe import history, same_rendering
from colabkit.runner.audit.scenario import STUDY_SEATS, TEAMS, Policy, Scenario, scenarios
from colabkit.runner.audit.trace import default_twin, same_trace
from colabkit.runner.audit.violation import Violation
from colabkit.runner.audit.wire import over_http
from colabkit.session import SessionSpec
from colabkit.tasks import Task
from colabkit.team import VariantConfig

PROBE_BUDGET = 30
"""The AI's budget (the study's) in the same-rendering probe, whatever the scenario's."""


def known_scenarios(task_id: str) -> tuple[Scenario, ...]:
    """The issue's failure patterns, as scenarios (each should pass on the fixed engine)."""
    wait, quiet = Policy(("wait",) * 8, "approve-oldest"), Policy((), "late")
    return (
        # a gated edit then a finish; the signatory approves the newest request first
        Scenario(task_id, "dr", budget=6, gates="edits", policies={
            "ai": Policy(("code:0", "edit:0", "finish"), "approve-oldest"), "D": wait,
            "R": Policy(("wait",) * 8, "approve-newest")}),
        # two gated edits open at the AI's last step: the later one must be submitted
        Scenario(task_id, "r", budget=3, gates="edits", policies={"ai": Policy(("code:0", "edit:0", "edit:1")),
                                                                   "R": quiet}),
        # four requests queued before a gated edit (messages and edits gated)
        Scenario(task_id, "r", budget=5, gates="edits", policies={
            "ai": Policy(("edit:0", "edit:1", "edit:0", "edit:1", "edit:0")), "R": quiet}),
        # an AI that edits and then waits, beside busy humans who also message one teammate only
        Scenario(task_id, "dr", budget=4, gates="none", policies={
            "ai": Policy(("edit:0", "wait", "wait", "wait")), "D": Policy(("code:0", "msg:0", "code:3", "dm:1")),
            "R": Policy(("code:1", "dm:0", "msg:0", "code:0"))}),
        # humans who finish or wait cannot end the session before the AI's budget
        Scenario(task_id, "dr", budget=4, gates="none", policies={
            "ai": Policy(("code:0",)), "D": Policy(("msg:0", "finish")), "R": wait}),
        # a binding cost cap with a request open
        Scenario(task_id, "r", budget=12, gates="edits", cost_cap=9_000, policies={
            "ai": Policy(("code:0", "edit:0") * 6), "R": quiet}),
        # a living memory's updates and a malformed answer
        Scenario(task_id, "dr", budget=4, gates="edits-and-finish", policies={
            "ai": Policy(("fail", "edit:1", "code:2", "edit:0")), "D": Policy(("update", "code:0")),
            "R": Policy(("update", "msg:0"), "approve-random")}),
    )


@dataclass
class HuntReport:
    """What the hunt played in one arm and the (shrunk) violations it found."""

    arm: str
    variants: tuple[str, ...]
    played: int = 0
    runs: int = 0
    seconds: float = 0.0
    scenario: Scenario | None = None
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def render(self) -> str:
        head = (f"hunt: {self.played} scenarios, {self.runs} runs over {len(self.variants)} variants in "
                f"{self.seconds:.0f} s: {len(self.violations)} violation(s)")
        if self.ok:
            return head + "\nevery invariant held"
        invariants = sorted({v.invariant for v in self.violations})
        lines = [head, f"broken: {', '.join(invariants)}", "minimal scenario:",
                 *("  " + line for line in self.scenario.describe().splitlines())] if self.scenario else [head]
        return "\n".join([*lines, *(v.render() for v in self.violations)])


class _Found(Exception):
    """A scenario broke an invariant (raised inside `hypothesis` so it shrinks the scenario)."""

    def __init__(self, scenario: Scenario, violations: list[Violation]) -> None:
        super().__init__(f"{len(violations)} violation(s)")
        self.scenario, self.violations = scenario, violations


class _Player:
    """Plays scenarios in the arm's variants, remembering verdicts (shrinking asks again)."""

    def __init__(self, specs: Sequence[SessionSpec], tasks: Mapping[str, Task], report: HuntReport,
                 shrink_seconds: float, workdir_root: Path | None, wire: bool = True) -> None:
        self.specs, self.tasks, self.report = list(specs), tasks, report
        self.wire = wire and all(over_http(s) for s in specs)  # one transport for the arm: twins compare alike
        self.termination = specs[0].settings.termination
        self.shrink_seconds, self.workdir_root = shrink_seconds, workdir_root
        self.focus: set[str] | None = None  # once found: only the variants involved
        self.found_at: float | None = None
        self.verdicts: dict[str, list[Violation]] = {}  # by the scenario's repr
        self.acted: dict[str, set[str]] = {}  # by variant: the seats that acted in its runs or its probe

    def variants(self, scenario: Scenario) -> list[SessionSpec]:
        humans = scenario.humans
        wanted = [s for s in self.specs if s.variant.humans in (humans, ())
                  or (len(humans) > 1 and len(s.variant.humans) == 1 and s.variant.humans[0] in humans
                      and _is_default(s.variant))]
        if self.focus is not None:
            focused = [s.variant for s in self.specs if s.variant.name in self.focus]
            twins = {t.name for f in focused if (t := default_twin(f, [s.variant for s in self.specs])) is not None}
            wanted = [s for s in wanted if s.variant.name in self.focus | twins
                      or any(is_gate_twin(s.variant, f) for f in focused)
                      or (not s.variant.structures and any(f.structures and f.humans == s.variant.humans
                                                           for f in focused))]
        return wanted

    def check(self, scenario: Scenario) -> list[Violation]:
        key = repr(scenario)
        if key in self.verdicts:
            return self.verdicts[key]
        if self.found_at is not None and time.monotonic() - self.found_at > self.shrink_seconds:
            return []  # shrinking has had its time: keep the smallest violation found so far
        task = self.tasks[scenario.task_id]
        specs = [scenario_spec(s, scenario, self.wire) for s in self.variants(scenario)]
        runs = [play(spec, task, scenario, self.workdir_root) for spec in specs]
        for run in runs:
            self.acted.setdefault(run.variant, set()).update(
                e.participant for e in run.events if e.phase == "task" and e.llm_calls)
        found = check_all(scenario, runs, self.termination) + same_trace(runs)
        probe = replace(scenario, budget=PROBE_BUDGET)  # room for the whole history before any budget ends it
        found += same_rendering([scenario_spec(s, probe) for s in self.specs], task, probe)
        actors = {actor for actor, _, _ in history(probe)}
        for spec in self.specs:
            self.acted.setdefault(spec.variant.name, set()).update(actors & set(spec.variant.team))
        if self.focus is not None:  # while shrinking, only the violations first found count
            found = [v for v in found if set(v.variants) <= self.focus | {"single"}]
        self.report.played += 1
        self.report.runs += len(runs)
        self.verdicts[key] = found
        return found

    def __call__(self, scenario: Scenario) -> None:
        found = self.check(scenario)
        if found:
            if self.focus is None:
                self.focus = {name for v in found for name in v.variants}
                self.found_at = time.monotonic()
            raise _Found(scenario, found)


def _is_default(variant: VariantConfig) -> bool:
    """A Default variant (no memory, no gates, no plugins): a seat's baseline across compositions."""
    return not variant.memory and variant.gate_source == "none" and not variant.structures


def teams(specs: Sequence[SessionSpec]) -> tuple[tuple[str, ...], ...]:
    """The arm's teams beyond the study's (`TEAMS`): the human seats of its variants, in order."""
    return tuple(dict.fromkeys(s.variant.humans for s in specs if s.variant.humans
                               and s.variant.humans not in TEAMS.values()))


def seated(known: Sequence[Scenario], team: tuple[str, ...]) -> tuple[Scenario, ...]:
    """The study's known scenarios played by `team`: its D and R keep their policies, each other
    seat plays R's (or, without R, D's) and signs the gated ones first (`NAME@SEAT`)."""
    extra = [h for h in team if h not in STUDY_SEATS]
    out = []
    for s in known:
        donor = s.policy("R" if "R" in s.humans else "D")
        policies = {**{r: p for r, p in s.policies.items() if r == "ai" or r in team}, **{h: donor for h in extra}}
        gates = f"{s.gates}@{extra[0]}" if extra and s.gates != "none" else s.gates
        out.append(replace(s, team=team, policies=policies, gates=gates))
    return tuple(out)


def unplayed(specs: Sequence[SessionSpec], acted: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """The seats of each variant that never acted in the hunt (fail closed: nothing checked is no pass)."""
    return {s.variant.name: missing for s in specs
            if (missing := [pid for pid in s.variant.team if pid not in acted.get(s.variant.name, set())])}


def hunt(specs: Sequence[SessionSpec], tasks: Mapping[str, Task], *, arm: str = "", examples: int = 20,
         real: bool = False, shrink_seconds: float = 60.0, workdir_root: Path | None = None,
         known: Sequence[Scenario] | None = None, wire: bool = True) -> HuntReport:
    """Search `specs`' variants (one arm: the same settings) for a violation (module docstring);
    `known` replaces the explicit scenarios played first (default: `known_scenarios`); `wire`:
    the double is reached over HTTP (`wire.RecordingServer`), else in-process."""
    try:
        from hypothesis import HealthCheck, Phase, example, given, settings
    except ImportError as exc:  # pragma: no cover - the locked environment has it
        raise ColabkitError("colabkit audit needs the `hypothesis` package (pip install hypothesis)") from exc
    if not specs:
        raise ColabkitError("the audit needs at least one variant")
    report = HuntReport(arm=arm, variants=tuple(s.variant.name for s in specs))
    player = _Player(specs, tasks, report, shrink_seconds, workdir_root, wire)
    task_ids = tuple(tasks)
    beyond = teams(specs)
    study = known_scenarios(task_ids[0])
    first = list(study + tuple(s for team in beyond for s in seated(study, team)) if known is None else known)
    if real and first:
        first.append(replace(first[0], real=True))
    def play_one(scenario: Scenario) -> None:
        player(scenario)

    test = given(scenarios(task_ids, teams=beyond))(play_one)
    for scenario in reversed(first):
        test = example(scenario)(test)
    test = settings(max_examples=max(examples, 1), derandomize=True, database=None, deadline=None,
                    phases=(Phase.explicit, Phase.generate, Phase.shrink) if examples else (Phase.explicit,),
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False)(test)
    start = time.monotonic()
    try:
        test()
    except _Found as found:
        report.scenario, report.violations = found.scenario, found.violations
    finally:
        report.seconds = time.monotonic() - start
    missing = unplayed(specs, player.acted) if report.ok else {}
    if missing:
        raise ColabkitError("the hunt checked nothing for " + "; ".join(
            f"variant {name!r} seat(s) {', '.join(seats)}" for name, seats in missing.items())
            + " (no scenario played them: their team matches none of the scenarios')")
    return report
