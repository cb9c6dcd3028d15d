"""Take a seat: a person's page of a seat session (JupyterLab or a Voilà page).

The session itself runs in the session host (`colabkit.seat.host`), started by the first
page that finds none; `take_seat(...)` connects this kernel's page to it and returns at
once (the cell never awaits: awaiting a widget inside a cell deadlocks, since comm messages
are not processed while a cell runs). The page shows the question waiting for its seat,
sends the person's valid answer, and shows whose turn it is meanwhile (turn-gated). So a
reload or a second visit resumes the person's view of the running session: the newest page
holds the seat, and a window it replaced says so and stops. A session that has ended shows
its end and the questionnaire (`pages.questionnaire`).

Both D and R may be persons (`persons={"D": "p-1", "R": "p-2"}`): one page each, the same
plan, one host.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from colabkit.errors import ColabkitError, one_line
from colabkit.runner.build import ModelSpec
from colabkit.seat.channel import connect, receive, send
from colabkit.seat.desk import WidgetDesk
from colabkit.seat.host import ending_text
from colabkit.seat.pages import answered, questionnaire
from colabkit.seat.plan import IDLE_EXIT_S, SeatPlan
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.seats.person import Fallback
from colabkit.session.seats.policy import Presentation
from colabkit.store import is_finished
from colabkit.tasks import load_tasks


@dataclass
class SeatRun:
    """This page's view of a seat session: display `widget`; `done` resolves to the stored folder."""

    plan: SeatPlan
    seat: str
    spec: SessionSpec
    desk: WidgetDesk = field(default_factory=WidgetDesk)
    result: widgets.VBox = field(default_factory=widgets.VBox)
    done: asyncio.Future[Path | None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    tasks: set[asyncio.Future[Any]] = field(default_factory=set)

    @property
    def widget(self) -> widgets.VBox:
        box = widgets.VBox([self.desk.widget, self.result])
        box.add_class("ck-seat-run")
        return box

    @property
    def folder(self) -> Path:
        return Path(self.plan.out) / self.spec.session_id

    def start(self) -> None:
        self._keep(self.attend())

    def _keep(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def attend(self) -> None:
        """Claim the seat at the host and follow the session until it ends or another page takes it."""
        if is_finished(self.folder):
            self.show_end(self.folder, ending_text(self.folder))
            return
        try:
            reader, writer = await connect(self.plan)
        except ColabkitError as exc:
            self.desk.ended(f"The session could not start: {one_line(exc)}")
            return
        try:
            await send(writer, {"op": "claim", "seat": self.seat})
            while (message := await receive(reader)) is not None:
                if not self.handle(message, writer):
                    return
            if is_finished(self.folder):
                self.show_end(self.folder, ending_text(self.folder))
            else:
                self.desk.ended("The connection to the session was lost: reload this page to carry on.")
        finally:
            writer.close()

    def handle(self, message: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        """Show one message from the host; False when this page is done with the session."""
        op = message["op"]
        if op == "question":
            presentation = self.desk.present(message["question"], number=message["number"])
            presentation.future.add_done_callback(lambda _: self._keep(self.answer(writer, message["number"],
                                                                                   presentation)))
        elif op == "waiting":
            self.desk.waiting()
        elif op == "withdrawn":
            self.desk.withdraw_current(message["reason"])
        elif op == "taken":
            self.desk.ended("This seat is now open in another window; this window no longer takes part.")
            return False
        elif op == "ended":
            self.show_end(Path(message["folder"]) if message["folder"] else None, message["text"])
            return False
        else:
            self.desk.ended(f"The session refused this page: {message.get('reason', op)}")
            return False
        return True

    async def answer(self, writer: asyncio.StreamWriter, number: int, presentation: Presentation[Any]) -> None:
        if presentation.future.cancelled():
            return
        await send(writer, {"op": "answer", "number": number,
                            "value": presentation.future.result().model_dump(mode="json"),
                            "first_interaction": presentation.first_interaction,
                            "invalid_attempts": list(presentation.invalid_attempts)})

    def show_end(self, folder: Path | None, text: str) -> None:
        """How the session ended, and the questionnaire (or a thank-you once it is answered)."""
        self.desk.ended(text)
        if folder is not None:
            self.result.children = [widgets.HTML("<b>Your answers to the questions are saved. Thank you!</b>")
                                    if answered(folder, self.seat) else questionnaire(folder, self.spec, self.seat)]
        if not self.done.done():
            self.done.set_result(folder)


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
              fallback: Fallback = "wait", settings: SessionSettings | Mapping[str, Any] | None = None,
              data_root: Path | str | None = None, persons: Mapping[str, str] | None = None,
              idle_exit_s: float = IDLE_EXIT_S) -> SeatRun:
    """This page's seat in the session (started if it is not running); returns its `SeatRun` at once.

    `persons` names every seat a person plays ({seat: participant id}; default: only `seat`),
    so the pages of one session build the same plan. `idle_exit_s`: the host stops after this
    long with no page open (`SeatPlan.idle_exit_s`).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise ColabkitError("take_seat runs in a notebook kernel (JupyterLab or Voilà): "
                            "it needs the kernel's event loop to wait for the person") from None
    if headless():
        raise ColabkitError("a seat session waits for a person, and this notebook was executed headless "
                            "(papermill/nbclient): a batch never waits for a person; open it in JupyterLab "
                            "or serve it with Voila (colabkit seat prints how)")
    persons = dict(persons or {seat: participant_id})
    if persons.get(seat) != participant_id:
        raise ColabkitError(f"persons {persons} does not seat participant {participant_id!r} at {seat}")
    knobs = settings.model_dump() if isinstance(settings, SessionSettings) else dict(settings or {})
    plan = SeatPlan(task=task_id, variant=variant, seed=seed, persons=persons,
                    models=dict(models) if isinstance(models, Mapping) else models, timeout_s=timeout_s,
                    fallback=fallback, settings=knobs, data_root=None if data_root is None else str(data_root),
                    out=str(Path(out).resolve()), idle_exit_s=idle_exit_s)
    spec = plan.spec()  # bad names are one clear line here, before a host starts
    load_tasks(data_root).get(task_id)
    run = SeatRun(plan=plan, seat=seat, spec=spec)
    run.start()
    return run
