"""How fast do stored sessions load back: JSON lines versus the parquet export.

A study grid is thousands of sessions; analysis notebooks reload them often. This writes a
synthetic results folder (real `SessionRecord`s and `Event`s, realistic sizes) and times
`load_sessions` / `load_events` from the JSON lines, `export_parquet`, and the same loads
from the parquet export.

    .venv/bin/python benchmarks/store_load.py [--sessions 2000] [--events 40] [--out DIR]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import colabkit
from colabkit.llm import CallRecord, ModelConfig
from colabkit.session import Event, SessionSettings, SessionSpec
from colabkit.session.totals import session_totals
from colabkit.store import SessionRecord, atomic_write_text, export_parquet, load_events, load_sessions
from colabkit.store.layout import EVENTS_FILE, SESSION_FILE
from colabkit.team import variant
from colabkit.workspace import IsolationReport

ACTIONS = ("send_message", "execute_code", "edit_result", "wait", "approve")
VARIANTS = ("single", "default-dr", "scaffolded-dr", "memory-r", "preassigned-d")


def synthesise(out: Path, n_sessions: int, n_events: int, seed: int = 0) -> None:
    """Write `n_sessions` finished sessions of `n_events` events each into `out`."""
    rng = random.Random(seed)
    isolation = IsolationReport(level="rlimits-only", network_isolated=False, data_read_only=True,
                                env_allowlisted=True, notes=())
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(n_sessions):
        spec = SessionSpec(task_id=f"archaeology/{i % 38}/0", variant=variant(VARIANTS[i % len(VARIANTS)]),
                           seed=i, models={"default": ModelConfig()}, settings=SessionSettings())
        sid = spec.session_id
        folder = out / sid
        folder.mkdir(parents=True)
        events = []
        for seq in range(n_events):
            action = rng.choice(ACTIONS)
            calls = () if action == "wait" and rng.random() < 0.5 else (CallRecord(
                caller="ai", model="local/smollm2-135m", prompt_tokens=rng.randint(800, 1600),
                completion_tokens=rng.randint(20, 200), latency_s=rng.uniform(1, 12), suite_replay=rng.random() < 0.2,
                attempts=1),)
            events.append(Event(
                session_id=sid, seq=seq, phase="task", round=seq // 3 + 1, participant=rng.choice(spec.participants),
                action=action, args={"text": "x" * rng.randint(10, 200)}, status="ok",
                result="y" * rng.randint(10, 400), thought="z" * rng.randint(10, 120), llm_calls=calls,
                cell_index=seq if action == "execute_code" else None,
                time=1.7e9 + seq,
            ))
        (folder / EVENTS_FILE).write_text("".join(e.model_dump_json() + "\n" for e in events), encoding="utf-8")
        sides = {p: spec.variant.persona(p).role for p in spec.participants}
        totals = session_totals(events, spec.settings, sides, rounds=events[-1].round if events else 0)
        record = SessionRecord(
            session_id=sid, spec_identity=spec.identity(), task_id=spec.task_id, task_digest="0" * 64, seed=spec.seed,
            briefings={p: "b" * 1500 for p in spec.participants},
            persona_versions={p: spec.variant.persona(p).version for p in spec.participants},
            variant_hash=spec.variant.identity(), spec=spec, models={p: spec.model_for(p) for p in spec.participants},
            memory=None, memory_digest=None, final_hypothesis="h" * 200, ended_by="budget", n_events=n_events,
            totals=totals, isolation=isolation,
            isolation_level=isolation.level, package_version=colabkit.__version__,
            started=start + timedelta(minutes=i), finished=start + timedelta(minutes=i + 3),
        )
        atomic_write_text(folder / SESSION_FILE, record.model_dump_json())


def timed(label: str, fn):
    t0 = time.perf_counter()
    value = fn()
    print(f"{label:<34} {time.perf_counter() - t0:8.2f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None, help="keep the synthetic folder here (default: temp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "results"
        timed(f"synthesise {args.sessions} x {args.events}", lambda: synthesise(out, args.sessions, args.events))
        sessions = timed("load_sessions (jsonl)", lambda: load_sessions(out))
        events = timed("load_events (jsonl)", lambda: load_events(out))
        timed("export_parquet", lambda: export_parquet(out))
        sessions_pq = timed("load_sessions (parquet)", lambda: load_sessions(out))
        events_pq = timed("load_events (parquet)", lambda: load_events(out))
        assert sessions.equals(sessions_pq) and events.equals(events_pq), "parquet differs from jsonl"
        print(f"{len(sessions)} sessions, {len(events)} events; parquet {events_pq.memory_usage(deep=True).sum() / 1e6:.0f} MB in memory")


if __name__ == "__main__":
    main()
