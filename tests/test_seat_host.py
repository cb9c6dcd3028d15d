"""The session host keeps a seat session alive across pages: resume, the newest page holds the
seat, two persons; and it stops when no page is open.

The host (`colabkit.seat.host`) runs in this process on the real engine and kernel, with the
AI agent (and R, when R is not a person) scripted; pages are plain connections speaking the
channel's messages, as a page's kernel does (`SeatRun`). A page that goes away and a new one
that claims the seat are what a reload is; the browser tests play the same in Voilà.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import seat_scenario as sc
from helpers.scripted import use_scripted
from helpers.stored_session import RATIFY, SLOTS

from colabkit.seat.channel import SOCKET, receive, send
from colabkit.seat.host import SessionHost
from colabkit.seat.plan import SeatPlan
from colabkit.session import Event


def plan_for(tmp_path, persons: dict[str, str]) -> SeatPlan:
    models = {k: v for k, v in sc.models().items() if k not in persons}
    return SeatPlan(task=sc.TASK_ID, variant=sc.VARIANT, seed=sc.seed(), persons=persons, models=models,
                    out=str(tmp_path / "results"), settings={"action_budget": 10, "max_rounds": 10})


class Page:
    """A page's end of the channel: claims a seat, reads what the host sends."""

    def __init__(self, plan: SeatPlan, seat: str) -> None:
        self.plan, self.seat = plan, seat

    async def open(self) -> dict[str, Any]:
        self.reader, self.writer = await asyncio.open_unix_connection(str(self.plan.runtime_dir() / SOCKET))
        await send(self.writer, {"op": "claim", "seat": self.seat})
        return await self.next()

    async def next(self) -> dict[str, Any]:
        """The next message other than "waiting" (the page says the others are acting)."""
        while True:
            message = await asyncio.wait_for(receive(self.reader), 60)
            assert message is not None
            if message["op"] != "waiting":
                return message

    async def answer(self, message: dict[str, Any]) -> None:
        await send(self.writer, {"op": "answer", "number": message["number"], "value": reply(message["question"]),
                                 "first_interaction": None, "invalid_attempts": []})

    def close(self) -> None:
        self.writer.close()


def reply(question) -> dict[str, Any]:
    """What the person answers: slots, acceptance, an approval when asked for one, else a wait."""
    if question.stage == "propose":
        return {**SLOTS, "gates": []}
    if question.stage == "ratify":
        return RATIFY[0]
    requests = question.observation.requests_for_me
    if requests:
        return {"thought": "", "action": "approve", "to": requests[0].request_id, "content": "checked"}
    return {"thought": "", "action": "wait", "content": "", "to": ""}


async def started(plan: SeatPlan) -> asyncio.Task:
    host = asyncio.ensure_future(SessionHost(plan).run(plan.runtime_dir()))
    for _ in range(600):
        if (plan.runtime_dir() / SOCKET).exists():
            return host
        await asyncio.sleep(0.05)
    raise AssertionError("the host did not serve")


async def play_to_the_end(page: Page, message: dict[str, Any]) -> dict[str, Any]:
    while message["op"] != "ended":
        if message["op"] == "question":
            await page.answer(message)
        message = await page.next()
    return message


def person_events(folder) -> list[Event]:
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e.person is not None]


def test_a_reopened_page_resumes_at_once_and_the_window_it_replaces_is_told(tmp_path):
    use_scripted(sc.scripts(), default=sc.DEFAULT)
    plan = plan_for(tmp_path, {"D": sc.PARTICIPANT})

    async def main():
        host = await started(plan)
        first = Page(plan, "D")
        shown = await first.open()
        assert shown["op"] == "question" and shown["number"] == 1 and shown["question"].stage == "propose"
        third = Page(plan, "D")  # the first tab is still connected (a closed tab's kernel lives on a while)
        resumed = await third.open()
        assert resumed["op"] == "question" and resumed["number"] == 1  # the same question, not a new session
        assert (await first.next())["op"] == "taken"  # the window it replaces is told, and stops
        await third.answer(resumed)
        ratify = await third.next()
        assert ratify["op"] == "question" and ratify["question"].stage == "ratify"
        third.close()  # a reload: the page goes, the session waits
        await asyncio.sleep(0.2)
        reloaded = Page(plan, "D")
        message = await reloaded.open()
        assert message["op"] == "question" and message["number"] == 2  # resumed
        ended = await play_to_the_end(reloaded, message)
        assert await host == 0
        return ended

    ended = asyncio.run(main())
    folder = plan.folder()
    assert ended["folder"] == str(folder) and "The session has ended" in ended["text"]
    assert json.loads((folder / "session.json").read_text())["ended_by"] in ("finish", "idle")
    person = person_events(folder)
    assert [e.action for e in person][:2] == ["propose_memory", "ratify_memory"]
    assert "approve" in [e.action for e in person] and all(e.participant == "D" for e in person)
    runtime = plan.runtime_dir()
    assert not (runtime / SOCKET).exists() and list(runtime.iterdir()) == []  # the host cleaned up after itself


@pytest.mark.parametrize("order", [("D", "R"), ("R", "D")])
def test_d_and_r_both_persons_from_two_pages_finish_a_session(tmp_path, order):
    use_scripted({"ai": sc.scripts()["ai"]}, default=sc.DEFAULT)
    plan = plan_for(tmp_path, {"D": "p-d", "R": "p-r"})

    async def main():
        host = await started(plan)
        pages = {seat: Page(plan, seat) for seat in order}

        async def attend(seat: str) -> dict[str, Any]:  # each page on its own, as two browsers
            return await play_to_the_end(pages[seat], await pages[seat].open())

        ends = await asyncio.gather(*(attend(seat) for seat in order))
        assert all(end["op"] == "ended" for end in ends)
        return await host

    assert asyncio.run(main()) == 0
    person = person_events(plan.folder())
    assert {(e.participant, e.person.participant_id) for e in person} == {("D", "p-d"), ("R", "p-r")}
    builds = [(e.participant, e.action) for e in person if e.phase == "build"]
    assert sorted(builds) == [("D", "propose_memory"), ("D", "ratify_memory"),
                              ("R", "propose_memory"), ("R", "ratify_memory")]


def test_a_page_starts_the_host_process_and_a_stopped_host_is_resumed_by_the_next_visit(tmp_path, monkeypatch):
    """`channel.connect` starts the host as its own process when none runs; SIGTERM stops it
    cleanly (no socket or pid left), and the next page starts a new one on the same question."""
    import os
    import signal
    import time

    from helpers.scripted_plugin import subprocess_env

    from colabkit.seat.channel import PID, connect

    for key, value in subprocess_env(default=sc.DEFAULT, scripts=sc.scripts()).items():
        monkeypatch.setenv(key, value)
    plan = plan_for(tmp_path, {"D": sc.PARTICIPANT})
    runtime = plan.runtime_dir()

    async def first_question() -> dict[str, Any]:
        reader, writer = await connect(plan)
        page = Page(plan, "D")
        page.reader, page.writer = reader, writer
        await send(writer, {"op": "claim", "seat": "D"})
        message = await page.next()
        writer.close()
        return message

    try:
        shown = asyncio.run(first_question())
        assert shown["op"] == "question" and shown["number"] == 1
        pid = int((runtime / PID).read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while (runtime / SOCKET).exists() or (runtime / PID).exists():
            assert time.monotonic() < deadline, (runtime / "host.log").read_text()
            time.sleep(0.1)
        again = asyncio.run(first_question())  # a new host, the same unanswered question
        assert again["op"] == "question" and again["number"] == 1 and again["question"].stage == "propose"
        assert int((runtime / PID).read_text()) != pid
    finally:
        sc.stop_hosts(plan.out)


def test_with_no_page_open_the_host_stops_within_its_idle_time(tmp_path):
    """`idle_exit_s` (minutes by default, seconds here): a host whose pages all closed stops,
    unfinished, and cleans up; the next visit replays and carries on (test above)."""
    import time

    use_scripted(sc.scripts(), default=sc.DEFAULT)
    plan = plan_for(tmp_path, {"D": sc.PARTICIPANT}).model_copy(update={"idle_exit_s": 1.0})

    async def main() -> float:
        host = await started(plan)
        page = Page(plan, "D")
        assert (await page.open())["op"] == "question"
        page.close()  # the only page goes
        closed = time.monotonic()
        assert await asyncio.wait_for(host, 60) == 0
        return time.monotonic() - closed

    assert asyncio.run(main()) < 30
    assert not (plan.runtime_dir() / SOCKET).exists() and not (plan.runtime_dir() / "host.pid").exists()
    assert not (plan.folder() / "session.json").exists()  # stopped, not finished
