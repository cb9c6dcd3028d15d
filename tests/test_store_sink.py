"""The event log and atomic writes: what an interrupted writer leaves, and what it never does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from colabkit.session import Event
from colabkit.store import JsonlEventSink, atomic_path, atomic_write_text

REPO = Path(__file__).resolve().parents[1]


def event(seq: int, session_id: str = "abcd") -> Event:
    return Event(session_id=session_id, seq=seq, phase="task", round=1, participant="ai", action="wait",
                 status="ok", thought=f"thought {seq}", time=1.0 + seq)


def test_finalise_publishes_every_event_once_and_removes_the_part(tmp_path):
    sink = JsonlEventSink(tmp_path / "events.jsonl")
    for seq in range(3):
        sink.emit(event(seq))
        # flushed per event: a reader of the .part sees it immediately
        assert len((tmp_path / "events.jsonl.part").read_text().splitlines()) == seq + 1
    assert not (tmp_path / "events.jsonl").exists()
    assert sink.finalise() == tmp_path / "events.jsonl"
    assert not (tmp_path / "events.jsonl.part").exists()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [Event.model_validate_json(line) for line in lines] == [event(s) for s in range(3)]


def test_a_killed_writer_leaves_only_the_part_file(tmp_path):
    child = textwrap.dedent(f"""
        import sys, time
        from colabkit.session import Event
        from colabkit.store import JsonlEventSink
        sink = JsonlEventSink({str(tmp_path / "events.jsonl")!r})
        for seq in range(4):
            sink.emit(Event(session_id="abcd", seq=seq, phase="task", round=1, participant="ai",
                            action="wait", status="ok", time=0.0))
        print("emitted", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "emitted"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl.part"]
    lines = (tmp_path / "events.jsonl.part").read_text().splitlines()
    assert [Event.model_validate_json(line).seq for line in lines] == [0, 1, 2, 3]


def test_closing_without_finalise_publishes_nothing(tmp_path):
    with JsonlEventSink(tmp_path / "events.jsonl") as sink:
        sink.emit(event(0))
    assert not (tmp_path / "events.jsonl").exists()
    assert (tmp_path / "events.jsonl.part").exists()
    with pytest.raises(ValueError, match="closed"):
        sink.emit(event(1))


def test_the_sink_refuses_gaps_repeats_and_foreign_sessions(tmp_path):
    sink = JsonlEventSink(tmp_path / "events.jsonl")
    sink.emit(event(0))
    with pytest.raises(ValueError, match="expected 1"):
        sink.emit(event(2))
    with pytest.raises(ValueError, match="expected 1"):
        sink.emit(event(0))
    with pytest.raises(ValueError, match="belongs to session other"):
        sink.emit(event(1, session_id="other"))
    sink.emit(event(1))
    sink.finalise()
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) == 2


def test_a_stale_part_file_is_never_appended_to(tmp_path):
    (tmp_path / "events.jsonl.part").write_text("left over\n")
    with pytest.raises(FileExistsError):
        JsonlEventSink(tmp_path / "events.jsonl")


def test_atomic_write_replaces_the_whole_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "session.json"
    atomic_write_text(target, json.dumps({"v": 1}))
    atomic_write_text(target, json.dumps({"v": 2}))
    assert json.loads(target.read_text()) == {"v": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]


def test_a_failed_atomic_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "snapshot.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("writer died")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.json"]


def test_atomic_files_get_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "session.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "session.json").stat().st_mode & 0o777 == 0o644
