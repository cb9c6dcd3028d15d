"""An ipywidgets stepper over stored sessions; all of what it shows comes from `trajectory`.

It opens on a table of the experiment's sessions (`session_table`: team sessions first) with
the first row's session selected. Pick an experiment (a results folder under a root) and a
session, filter by participant and
phase, then step through the events with the slider or the buttons: the step view shows the
event (thought, code and output, message, editor text, gate and decision) and the workspace
at that moment; tabs hold the frozen memory, each participant's thoughts and the whole
session. The widget holds no logic of its own beyond wiring, so the executed notebook's
static rendering (`static_html`: the session table and `trajectory.render_session`) shows the
same content without a kernel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from colabkit.analysis.private_notes import (
    first_appearances,
    note_fates,
    render_private_notes,
    render_step_marks,
)
from colabkit.analysis.session_table import render_session_table, session_table
from colabkit.analysis.trajectory import (
    ALL,
    PHASES,
    Trajectory,
    experiments,
    load_trajectory,
    render_claims,
    render_memory,
    render_session,
    render_step,
    render_thoughts,
    select_steps,
)


class TrajectoryExplorer:
    """The widget tree (`.widget`) and its state; `show(...)` selects programmatically."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.trajectory: Trajectory | None = None
        self.table = pd.DataFrame()
        self.steps: list[int] = []
        found = experiments(self.root)
        self.experiment = widgets.Dropdown(description="experiment", options=[(str(p), p) for p in found],
                                           layout=widgets.Layout(width="60%"))
        self.sessions = widgets.HTML()  # the experiment's session table
        self.sessions.add_class("ck-session-table")
        self.session = widgets.Dropdown(description="session", layout=widgets.Layout(width="60%"))
        self.participant = widgets.Dropdown(description="participant", options=[ALL])
        self.phase = widgets.ToggleButtons(description="phase", options=list(PHASES))
        self.step = widgets.IntSlider(description="step", min=1, max=1, value=1, continuous_update=False)
        self.previous = widgets.Button(description="◀ previous")
        self.next = widgets.Button(description="next ▶")
        self.view = widgets.HTML()
        self.memory, self.thoughts, self.full = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.claims = widgets.HTML()  # the submitted hypothesis claim by claim -> supporting cells
        self.private = widgets.HTML()  # each private note and where it first appeared
        self.marks: dict[int, list[str]] = {}
        tabs = widgets.Tab(children=[self.view, self.memory, self.thoughts, self.full, self.claims, self.private])
        for i, title in enumerate(("Step", "Memory", "Thoughts", "Whole session", "Claims", "Private notes")):
            tabs.set_title(i, title)
        self.widget = widgets.VBox([self.experiment, self.sessions, self.session, widgets.HBox([self.participant, self.phase]),
                                    widgets.HBox([self.previous, self.step, self.next]), tabs])
        self.experiment.observe(self._on_experiment, names="value")
        self.session.observe(self._on_session, names="value")
        self.participant.observe(self._on_filter, names="value")
        self.phase.observe(self._on_filter, names="value")
        self.step.observe(self._on_step, names="value")
        self.previous.on_click(lambda _: self.move(-1))
        self.next.on_click(lambda _: self.move(+1))
        if not found:
            self.view.value = f"<i>no finished sessions under {self.root}</i>"
        else:
            self._on_experiment()

    def show(self, experiment: Path | str | None = None, session_id: str | None = None) -> None:
        """Select an experiment and a session (e.g. from a notebook's parameters)."""
        if experiment is not None:
            self.experiment.value = Path(experiment)
        if session_id:
            self.session.value = session_id

    def static_html(self) -> str:
        """What the widget shows, without a kernel: the session table (the selected row marked)
        and the selected session whole, for the executed notebook to read well."""
        if self.trajectory is None:
            return f"<i>no finished sessions under {self.root}</i>"
        return (f"<h4>Sessions of {self.experiment.value}</h4>"
                f"{render_session_table(self.table, self.session.value)}{render_session(self.trajectory)}"
                f"{self.private.value}")

    def move(self, delta: int) -> None:
        """Step forward or back within the filtered events."""
        self.step.value = max(self.step.min, min(self.step.max, self.step.value + delta))

    def _on_experiment(self, _: Any = None) -> None:
        """Show the experiment's session table and select its first row (a team session when
        there is one): a Dropdown whose options change selects nothing, which would leave the
        explorer (and the notebook's default `session_id=""`) showing no session."""
        rows = session_table(self.experiment.value)
        self.table = rows
        self.session.options = [(f"{r.variant} · {r.task_id} · seed {r.seed} · {r.ending} · {r.session_id}",
                                 r.session_id) for r in rows.itertuples()]
        if len(rows):
            self.session.value = rows["session_id"].iloc[0]
        else:
            self.trajectory = None
            self.view.value = f"<i>no finished sessions in {self.experiment.value}</i>"

    def _on_session(self, _: Any = None) -> None:
        if self.session.value is None:
            return
        self.sessions.value = render_session_table(self.table, self.session.value)
        self.trajectory = load_trajectory(self.experiment.value, self.session.value)
        self.participant.options = [ALL, *self.trajectory.participants]
        self.memory.value = render_memory(self.trajectory)
        self.claims.value = render_claims(self.trajectory)
        fates = note_fates(self.trajectory)
        self.private.value = render_private_notes(fates)
        self.marks = first_appearances(fates)
        self.thoughts.value = "".join(render_thoughts(self.trajectory, p)
                                      for p in self.trajectory.participants if p != "system")
        self._on_filter()

    def _on_filter(self, _: Any = None) -> None:
        if self.trajectory is None:
            return
        self.steps = select_steps(self.trajectory, self.participant.value, self.phase.value)
        self.step.max = max(len(self.steps), 1)
        self.step.value = 1
        self.full.value = render_session(self.trajectory, self.participant.value, self.phase.value)
        self._on_step()

    def _on_step(self, _: Any = None) -> None:
        if self.trajectory is not None:
            view = render_step(self.trajectory, self.steps, self.step.value - 1)
            if self.steps:
                seq = int(self.trajectory.events.iloc[self.steps[self.step.value - 1]]["seq"])
                view += render_step_marks(self.marks, seq)
            self.view.value = view
