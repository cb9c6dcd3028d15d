"""Progress where output is not a terminal (a log, a pipe, CI): plain lines, never tqdm's
carriage-return redraws (a batch's log had 58 KB of them)."""

from __future__ import annotations

from colabkit.runner import progress
from colabkit.runner.progress import Progress, SessionOutcome, close_bar, progress_bar


def outcome(i: int) -> SessionOutcome:
    return SessionOutcome(session_id=str(i), task_id="t", variant="v", seed=0, status="done", ran_here=True)


def test_a_bar_into_a_log_writes_lines_without_carriage_returns(capsys):
    bar = Progress(300, desc="sessions")  # stderr is captured here: not a terminal
    for i in range(300):
        bar.finished(outcome(i))
    bar.close()
    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.splitlines() == ["sessions: 300/300 session, done 300 failed 0 cached 0 | " + bar.spend.short()]


def test_a_long_run_writes_a_line_at_most_every_interval_and_its_last_state(capsys, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    bar, handle = progress_bar(10, desc="scores", unit="score")
    for _ in range(10):
        clock[0] += progress.LINE_EVERY_S / 4  # a line every fourth tick
        bar.update(1)
    close_bar(bar, handle)
    assert capsys.readouterr().err.splitlines() == ["scores: 4/10 score", "scores: 8/10 score", "scores: 10/10 score"]
