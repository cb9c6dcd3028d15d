"""`declared-removal`: a continuation without a member differs from its control only where the
removal declares (issue 47), checked with the hunt's own traces (`trace.trace_of`, `trace.diff`).

A contribution (`colabkit.analysis.contributions`) is only the member's if removing it changes
nothing else. `removal_pair` plays a scenario's parent with the audit's test double, then two
continuations from event N under the parent's seed through the fork hook (`ForkReplay`, on the
engine's own entry point): the control (`none`) and the removal (`remove_member`). Both are
recorded like any audited run, so the whole trace is compared, channel by channel.

What a removal of member M at N declares, and so what `removal_violations` projects out:

- M's own channels from N (`turns M`, `requests M`, `charges M`): the removal must have none of
  M's steps, requests or charges after N (M is asked nothing), and its entries before N must be
  the control's;
- what M's steps put in front of the others: in every other member's prompts, M's chat
  messages, cells and activity lines are left out and the cell and message numbers masked (they
  shift when M's items are gone); where M edited the result after N in the control, the
  "Result editor" section too;
- in the notebook, M's cells;
- the answer, when M edited after N in the control, and the metrics, when M did anything but
  wait after N (its acts are counted there).

Everything else must be equal: the other members' turns (round, action, content, status),
their charges, their prompts otherwise (the team list, the budgets, the rules), how the session
ended. Under the double's policies, which play their scripts whatever they see, a member
asked in a different round, or shown something M did not do, is an undeclared difference.
A waiting member is skipped while it has nothing new in view, so M's silence may move the
round in which a waiting teammate is asked: scenarios for this check keep the others acting.
"""

from __future__ import annotations

import re
from pathlib import Path

from colabkit.runner.audit.player import Run, play
from colabkit.runner.audit.scenario import Scenario
from colabkit.runner.audit.trace import Declared, Trace, diff, metric_values, trace_of
from colabkit.runner.audit.violation import Violation
from colabkit.session import SessionSpec
from colabkit.session.fork import ForkPoint, ForkReplay, NoChange, RemoveMember
from colabkit.tasks import Task

INVARIANT = "declared-removal"
_INDEX = ((re.compile(r"\[#\d+ "), "[#? "), (re.compile(r"\[cell \d+ "), "[cell ? "),
          (re.compile(r"\(\d+ older "), "(? older "))
_ITEM = re.compile(r"\[cell \d+ by |\[#\d+ |\[activity\] |\[your private thought|# |r\d+ \S+ \S+.* -> ")
"""The start of an item of a prompt's lists (a cell, a message, an activity line, a thought) or a section."""


def removal_pair(spec: SessionSpec, task: Task, scenario: Scenario, member: str, at: int,
                 workdir_root: Path | None = None) -> tuple[Run, Run, Run]:
    """(parent, control, removal): the scenario played, then continued from event `at` unchanged
    and with `member` removed, each under the parent's seed."""
    parent = play(spec, task, scenario, workdir_root)

    def continued(change: NoChange | RemoveMember) -> Run:
        point = ForkPoint(parent_id="audit-parent", parent_spec_identity=spec.identity(), at=at, change=change,
                          seed=spec.seed)
        hook = ForkReplay(point, parent.events, parent.result.snapshot.cells)
        run = play(spec, task, scenario, workdir_root, fork=hook)
        if hook.divergence is not None or not hook.reached:
            raise RuntimeError(hook.divergence or f"the replay ended before event {at}")
        return run

    return parent, continued(NoChange()), continued(RemoveMember(role=member))


def removal_violations(control: Run, removed: Run, member: str, at: int) -> list[Violation]:
    """What differs between a control and its removal beyond the removal's declaration (module
    docstring); empty when the removal is a declared change."""
    pair = (f"{control.variant} control", f"{removed.variant} without {member}")
    found = [Violation(INVARIANT, pair, f"{member} {what} after event {at} in the removal")
             for what, seen in (("took a step", any(e.participant == member for e in removed.events[at:])),
                                ("was asked", _asked_after(removed, member, at)))
             if seen]
    after = [e for e in control.events[at:] if e.participant == member and e.phase == "task"]
    edited = any(e.action == "edit_result" for e in after)
    acted = any(e.action != "wait" for e in after)
    traces = [_projected(trace_of(run, Declared(), metric_values(run) if not acted else None), run, member,
                         edited) for run in (control, removed)]
    for channel in [c for c in traces[0].channels if c.split(" ")[-1] == member]:
        traces[0].channels[channel] = traces[0].channels[channel][:len(traces[1].channels.get(channel, []))]
    found += [Violation(INVARIANT, pair, line) for line in diff(*traces)]
    missing = sorted(set(traces[0].channels) ^ set(traces[1].channels))
    if missing:
        found.append(Violation(INVARIANT, pair, f"channels in one run only: {', '.join(missing)}"))
    return found


def _asked_after(run: Run, member: str, at: int) -> bool:
    """Whether a request by `member` was carried by an event at or after `at` (or by none)."""
    mine = [e.seq for e in run.events for _ in e.llm_calls if e.participant == member]
    calls = [c for c in run.calls if c["role"] == member]
    return len(calls) > len(mine) or any(seq >= at for seq in mine)


def _projected(trace: Trace, run: Run, member: str, edited: bool) -> Trace:
    """`trace` with the removal's declared parts left out of the shared channels (module docstring)."""
    for name, entries in trace.channels.items():
        if name.startswith("requests ") and not name.endswith(f" {member}"):
            trace.channels[name] = [_without(text, member, edited) for text in entries]
    if "kernel" in trace.channels:
        trace.channels["kernel"] = [c for c in trace.channels["kernel"] if not c.startswith(f"{member}: ")]
    if edited:
        trace.channels["end"] = [line for line in trace.channels["end"] if not line.startswith("answer ")]
    if trace.channels.get("metrics") == []:
        trace.channels.pop("metrics")
    return trace


def _without(text: str, member: str, edited: bool) -> str:
    """A request as sent without `member`'s items (its messages, cells with their code and
    output, activity lines), the numbering masked; without the result editor when `member` edited it."""
    who = re.escape(member)
    mine = re.compile(rf"\[cell \d+ by {who}:|\[#\d+ {who} ->|(?:\[activity\] )?r\d+ {who} ")
    out, skipping = [], False
    for line in text.split("\n"):
        if skipping and line and not _ITEM.match(line):
            continue  # the rest of one of its cells (code, output; a blank line ends a section)
        skipping = False
        if mine.match(line):
            skipping = line.startswith("[cell ")
            continue
        out.append(line)
    joined = "\n".join(out)
    if edited:
        joined = re.sub(r"# Result editor[^\n]*\n(?:(?!# )[^\n]*\n?)*", "", joined)
    for pattern, mask in _INDEX:
        joined = pattern.sub(mask, joined)
    return joined
