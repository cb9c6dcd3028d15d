"""The session host: one process runs a seat session and serves its persons' pages.

`python -m colabkit.seat PLAN.json` (started by the first page that finds none, see
`channel.connect`) runs the session with a `PersonSeat` per person whose desk is a
`RemoteDesk`: a question is kept as the seat's current one and sent to the page holding
the seat, if any. A page that connects later (a reload, a second visit, the other person)
claims its seat and is sent that question at once, so a reload resumes the person's view.
A seat is held by one page at a time, the newest: a page that claims it takes it over (a
reopened page returns to the session without asking; the tab it replaces, if it is still
open, is told the seat is open in another window and stops). A closed tab's kernel may
live on a while (Voila culls it, `pages.voila_command`), so the newest claim must win.

When the session ends every page is told how (and where it is stored, for the
questionnaire); the host then stops. With no page connected for `plan.idle_exit_s` (five
minutes unless set), the host stops too, unfinished: the person's answers are in the
response cache, so the next host replays them and the session carries on where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colabkit.errors import one_line
from colabkit.hashing import sha256_hex
from colabkit.runner import arecord_session
from colabkit.seat.channel import PID, SOCKET, hold_lock, receive, send
from colabkit.seat.plan import SeatPlan
from colabkit.seat.view import question_html
from colabkit.session.seats.person import SeatTerms
from colabkit.session.seats.policy import PersonSeat, Presentation, Question
from colabkit.store import SESSION_FILE
from colabkit.tasks import load_tasks


@dataclass
class Waiting:
    """A seat's current question: its number (per seat, from 1), the question, its presentation."""

    number: int
    question: Question[Any]
    presentation: Presentation[Any]


@dataclass
class RemoteDesk:
    """The `Desk` of one seat in the host: keeps the current question, forwards it to the page."""

    host: SessionHost
    seat: str
    asked: int = 0
    waiting: Waiting | None = None

    def present(self, question: Question[Any]) -> Presentation[Any]:
        loop = asyncio.get_running_loop()
        presentation: Presentation[Any] = Presentation(future=loop.create_future(),
                                                       rendered_hash=sha256_hex(question_html(question)))
        self.asked += 1
        self.waiting = Waiting(self.asked, question, presentation)
        self.host.tell(self.seat, self.question_message())
        return presentation

    def withdraw(self, presentation: Presentation[Any], reason: str) -> None:
        if self.waiting is not None and self.waiting.presentation is presentation:
            self.host.tell(self.seat, {"op": "withdrawn", "number": self.waiting.number, "reason": reason})
            self.waiting = None

    def question_message(self) -> dict[str, Any]:
        if self.waiting is None:
            return {"op": "waiting"}
        return {"op": "question", "number": self.waiting.number, "question": self.waiting.question}

    def answer(self, message: dict[str, Any]) -> None:
        """A page's valid answer to the current question (validated again against the host's schema)."""
        waiting = self.waiting
        if waiting is None or message.get("number") != waiting.number or waiting.presentation.future.done():
            return  # an answer to a question already withdrawn or answered from another window
        presentation = waiting.presentation
        presentation.first_interaction = message.get("first_interaction")
        presentation.invalid_attempts.extend(message.get("invalid_attempts", ()))
        self.waiting = None
        presentation.future.set_result(waiting.question.schema.model_validate(message["value"]))


@dataclass
class SessionHost:
    plan: SeatPlan
    desks: dict[str, RemoteDesk] = field(default_factory=dict)
    pages: dict[str, asyncio.StreamWriter] = field(default_factory=dict)
    ended: dict[str, Any] | None = None
    idle_since: float | None = None
    sending: set[asyncio.Future[None]] = field(default_factory=set)

    def tell(self, seat: str, message: dict[str, Any]) -> None:
        writer = self.pages.get(seat)
        if writer is not None:
            sent = asyncio.ensure_future(_send_quietly(writer, message))
            self.sending.add(sent)
            sent.add_done_callback(self.sending.discard)

    async def page(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One page's connection: its claim, then its answers until it goes."""
        claim = await receive(reader)
        seat = claim.get("seat") if claim else None
        if claim is None or seat not in self.desks:
            await _send_quietly(writer, {"op": "refused", "reason": f"no person seat {seat!r} in this session"})
            writer.close()
            return
        holder = self.pages.get(seat)
        if holder is not None:  # the newest page holds the seat: a reopened page is back in the session at once
            await _send_quietly(holder, {"op": "taken"})
            holder.close()
        self.pages[seat] = writer
        self.idle_since = None
        await _send_quietly(writer, self.ended or self.desks[seat].question_message())
        while (message := await receive(reader)) is not None:
            if message.get("op") == "answer" and self.pages.get(seat) is writer:
                self.desks[seat].answer(message)
        if self.pages.get(seat) is writer:
            del self.pages[seat]
            if not self.pages:
                self.idle_since = asyncio.get_running_loop().time()

    async def run(self, folder: Path) -> int:
        lock = hold_lock(folder)
        if lock is None:
            return 0  # another host serves this session
        (folder / PID).write_text(str(os.getpid()))
        spec = self.plan.spec()
        task = load_tasks(self.plan.data_root).get(self.plan.task)
        seats = {}
        for seat in self.plan.persons:
            self.desks[seat] = RemoteDesk(self, seat)
            seats[seat] = PersonSeat(SeatTerms.model_validate(spec.model_for(seat).extra["seat"]), self.desks[seat])
        (folder / SOCKET).unlink(missing_ok=True)
        server = await asyncio.start_unix_server(self.page, path=str(folder / SOCKET))
        loop = asyncio.get_running_loop()
        self.idle_since = loop.time()
        session = asyncio.ensure_future(arecord_session(spec, task, out=self.plan.out, seats=seats))
        try:
            while not session.done():
                await asyncio.wait([session], timeout=1.0)
                if self.idle_since is not None and loop.time() - self.idle_since > self.plan.idle_exit_s:
                    session.cancel()
                    print(f"no page for {self.plan.idle_exit_s:g} s: stopped; the next visit resumes", flush=True)
                    return 0
            self.ended = ended_message(session)
            for seat in list(self.pages):
                self.tell(seat, self.ended)
            await asyncio.sleep(1.0)  # let the pages read it
            return 0 if self.ended["folder"] else 1
        finally:
            for writer in self.pages.values():
                writer.close()
            server.close()
            (folder / SOCKET).unlink(missing_ok=True)
            (folder / PID).unlink(missing_ok=True)
            os.close(lock)
            if self.ended is not None and self.ended["folder"]:  # stored: nothing here is needed again
                shutil.rmtree(folder, ignore_errors=True)


def ended_message(session: asyncio.Future[Path]) -> dict[str, Any]:
    """How the session ended, for the pages: the text to show and the stored folder (or None)."""
    error = session.exception()
    if error is not None:
        print(f"the session stopped: {one_line(error)}", flush=True)
        return {"op": "ended", "text": f"The session stopped: {one_line(error)}", "folder": None}
    folder = session.result()
    return {"op": "ended", "folder": str(folder), "text": ending_text(folder)}


def ending_text(folder: Path) -> str:
    record = json.loads((folder / SESSION_FILE).read_text())
    return f"The session has ended ({record['ended_by']}). Thank you!"


async def _send_quietly(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError):
        await send(writer, message)


async def serve(plan_file: Path) -> int:
    """Run the host of the plan in `plan_file`; a SIGTERM stops it cleanly (socket and pid removed)."""
    plan = SeatPlan.model_validate_json(plan_file.read_text())
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)  # type: ignore[union-attr]
    try:
        return await SessionHost(plan).run(plan_file.parent)
    except asyncio.CancelledError:
        print("stopped by SIGTERM; the next visit resumes", flush=True)
        return 143


def main(argv: list[str]) -> int:
    """`python -m colabkit.seat PLAN.json` (see `channel.start_host`)."""
    return asyncio.run(serve(Path(argv[0])))
