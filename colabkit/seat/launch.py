"""Take a seat: run a session in the notebook's kernel with a person playing D or R.

`take_seat(...)` names the seat in the spec (`person_model`, so the session id and the record
say a person played it), starts the session as an asyncio task on the kernel's own loop and
returns at once: the cell never awaits (awaiting a widget inside a cell deadlocks, since comm
messages are not processed while a cell runs). The person's form resolves the future the
seat awaits; the others wait meanwhile (turn-gated). When the session ends it is stored like
any other (`colabkit.runner.arecord_session`) and an optional questionnaire (Co-Gym-style
1-5 ratings and a comment) is offered; its answers go to `person.json` in the session folder.

`voila_command` prints how to serve the same notebook as the participant page (Voilà: one
kernel per visitor, no code shown, no execute requests from the page).
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets
from pydantic import ValidationError

from colabkit.errors import ColabkitError, one_line
from colabkit.llm import ModelConfig
from colabkit.runner import arecord_session, build_spec
from colabkit.runner.build import ModelSpec, model_config
from colabkit.seat.desk import WidgetDesk
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.seats.person import Fallback, SeatTerms, person_model
from colabkit.session.seats.policy import PersonSeat, stamp
from colabkit.store import atomic_write_text
from colabkit.tasks import Task, load_tasks
from colabkit.team import variant as variant_config

PERSON_FILE = "person.json"
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "take_a_seat.ipynb"
# Co-Gym's real-condition participants rated the outcome and the collaboration on 1-5 scales
# with free-text feedback (SALT-NLP/cogym-real-trajectories); these are the same kinds of item.
QUESTIONS = {
    "outcome": "How satisfied are you with the team's final result?",
    "collaboration": "How well did the AI agent collaborate with you?",
    "communication": "How clear was the team's communication?",
    "control": "How much control did you have over what the team did?",
}


def seat_spec(task_id: str, variant: str, seat: str, seed: int, *, participant_id: str,
              models: Mapping[str, ModelSpec] | str | None = None, timeout_s: float | None = None,
              fallback: Fallback = "wait", settings: SessionSettings | None = None) -> SessionSpec:
    """The spec of a session with a person in `seat` ("D" or "R"; the AI agent stays a model).

    `models` maps roles to models as everywhere (a string: every role's). The seat's own
    entry (else the default) is the persona's model: it sizes the observation profile, so the
    person sees what the simulated persona would have, and takes timed-out steps under
    `fallback="model"`.
    """
    config = variant_config(variant)
    if seat not in config.humans:
        raise ColabkitError(f"seat {seat!r} is not a simulated human of {variant}: a person plays one of "
                            f"{', '.join(config.humans) or '(none: the single agent has no human seat)'}")
    given: dict[str, ModelSpec] = {"default": models} if isinstance(models, str) else dict(models or {})
    persona = model_config(given.get(seat) or given.get("default") or ModelConfig())
    try:
        terms = SeatTerms(participant_id=participant_id, timeout_s=timeout_s, fallback=fallback, persona_model=persona)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ColabkitError(f"seat {'.'.join(map(str, error['loc']))}: {error['msg']} "
                            f"(got {error.get('input')!r})") from None
    return build_spec(task_id, variant, seed, models={**given, seat: person_model(terms)}, settings=settings)


@dataclass
class SeatRun:
    """A running session with a person in `seat`: display `widget`; `done` resolves to the folder."""

    spec: SessionSpec
    seat: str
    out: Path
    desk: WidgetDesk
    done: asyncio.Future[Path]
    result: widgets.VBox = field(default_factory=widgets.VBox)

    @property
    def widget(self) -> widgets.VBox:
        box = widgets.VBox([self.desk.widget, self.result])
        box.add_class("ck-seat-run")
        return box

    def finished(self, task: asyncio.Future[Path]) -> None:
        """Show how the session ended and offer the questionnaire."""
        if task.cancelled():
            self.desk.ended("The session was cancelled.")
            return
        error = task.exception()
        if error is not None:
            self.desk.ended(f"The session stopped: {one_line(error)}")
            return
        folder = task.result()
        record = json.loads((folder / "session.json").read_text())
        self.desk.ended(f"The session has ended ({record['ended_by']}). Thank you!")
        self.result.children = [questionnaire(folder, self.spec, self.seat)]


def headless() -> bool:
    """Whether this kernel runs cells for nobody: executed by papermill/nbclient, not Voilà.

    A frontend a person uses (JupyterLab, Notebook, VS Code) sends execute requests that
    allow stdin; nbclient (papermill's engine) never does. Voilà executes through nbclient
    too, but serves the page to a visitor, and marks its kernels with `VOILA_*` variables.
    """
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or any(name.startswith("VOILA_") for name in os.environ):
        return False
    return not getattr(kernel, "_allow_stdin", True)  # ipykernel's record of the current request


def take_seat(task_id: str, variant: str, seat: str, seed: int = 0, *, participant_id: str, out: Path | str,
              models: Mapping[str, ModelSpec] | str | None = None, timeout_s: float | None = None,
              fallback: Fallback = "wait", settings: SessionSettings | None = None,
              data_root: Path | str | None = None, task: Task | None = None) -> SeatRun:
    """Start the session as a task on the kernel's loop and return its `SeatRun` at once."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise ColabkitError("take_seat runs in a notebook kernel (JupyterLab or Voilà): "
                            "it needs the kernel's event loop to wait for the person") from None
    if headless():
        raise ColabkitError("a seat session waits for a person, and this notebook was executed headless "
                            "(papermill/nbclient): a batch never waits for a person; open it in JupyterLab "
                            "or serve it with Voila (colabkit seat prints how)")
    spec = seat_spec(task_id, variant, seat, seed, participant_id=participant_id, models=models,
                     timeout_s=timeout_s, fallback=fallback, settings=settings)
    task_def = task or load_tasks(data_root).get(task_id)
    desk = WidgetDesk()
    terms = SeatTerms.model_validate(spec.model_for(seat).extra["seat"])
    done = loop.create_task(arecord_session(spec, task_def, out=out, seats={seat: PersonSeat(terms, desk)}))
    run = SeatRun(spec=spec, seat=seat, out=Path(out), desk=desk, done=done)
    done.add_done_callback(run.finished)
    return run


def questionnaire(folder: Path, spec: SessionSpec, seat: str) -> widgets.VBox:
    """The optional post-session questionnaire; its answers are written to `person.json`."""
    scales = {key: widgets.ToggleButtons(options=[1, 2, 3, 4, 5], value=None, description="", style={"button_width": "40px"})
              for key in QUESTIONS}
    comment = widgets.Textarea(placeholder="Anything else you want to tell us (optional)",
                               layout=widgets.Layout(width="95%"))
    note = widgets.HTML()
    send = widgets.Button(description="Send answers", button_style="primary")
    shown = stamp()

    def submit(_: Any) -> None:
        ratings = {key: scale.value for key, scale in scales.items()}
        save_person_record(folder, spec, seat, {"ratings": ratings, "comment": comment.value,
                                                "shown": shown.model_dump(), "submitted": stamp().model_dump()})
        for widget in (*scales.values(), comment, send):
            widget.disabled = True
        note.value = "<b>Thank you: your answers are saved.</b>"

    send.on_click(submit)
    rows: list[widgets.Widget] = [widgets.HTML("<h4>A few questions (optional; 1 = not at all, 5 = fully)</h4>")]
    for key, text in QUESTIONS.items():
        rows += [widgets.HTML(html.escape(text)), scales[key]]
    box = widgets.VBox([*rows, comment, send, note])
    box.add_class("ck-questionnaire")
    return box


def save_person_record(folder: Path, spec: SessionSpec, seat: str, questionnaire: dict[str, Any] | None) -> Path:
    """Write `person.json` (who sat where, on what terms, and the questionnaire) atomically."""
    terms = SeatTerms.model_validate(spec.model_for(seat).extra["seat"])
    path = folder / PERSON_FILE
    atomic_write_text(path, json.dumps({"schema_version": 1, "session_id": spec.session_id, "seat": seat,
                                        "terms": terms.model_dump(mode="json"), "questionnaire": questionnaire},
                                       indent=1))
    return path


def voila_command(notebook: Path, port: int = 8866) -> str:
    """The command that serves a parameterised seat notebook as the participant page."""
    return shlex.join([sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
                       "--Voila.ip=127.0.0.1"])


def participant_notebook(folder: Path | str, parameters: Mapping[str, Any]) -> Path:
    """A copy of take_a_seat.ipynb with `parameters` set (papermill's parameterisation), for Voilà."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOK)), dict(parameters))
    name = f"seat-{parameters.get('participant_id', 'person')}.ipynb"
    nbformat.write(nb, folder / name)
    return folder / name
