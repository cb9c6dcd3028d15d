"""From stored sessions to the study's figure: loading, rule-based scoring, statistics, figure.

The reference grid is 1,482 sessions (13 variants x 38 tasks x 3 seeds); a notebook reloads
and re-analyses it often, so the whole path must take seconds. This writes synthetic stored
sessions, times each stage and checks the growth from 150 to 1,482 to 15,000 sessions:

1. synthesise: one real session per variant (bench model, real kernel and store), cloned
   over the demo tasks and seeds into N session folders (each clone a consistent record:
   its own spec, identity and session id);
2. load: `colabkit.store.load_sessions` and `load_events` (JSON lines into pandas);
3. score: the rule-based process metrics (`work`: W_total, W_human), without a judge,
   through `colabkit.evaluation.score_results`, then `load_scores`; a second
   `score_results` finds every score stored (what a notebook's rerun pays); and, outside
   the total, the same scoring on a twin of the sessions writing each score file on its
   own (data fsync, rename, folder fsync: the behaviour before `AtomicBatch`), for the
   before/after ratio (sizes up to --compare-max only: it is slow and loads the disk);
4. statistics: `study_table`, the Scaffolded - Default `contrasts` (task-level test + random-slope model)
   and `power_table`; the judged metrics (Performance, HMS, H_init,norm, S_hyp, delivery)
   are filled with seeded synthetic values, since no judge runs here;
5. figure: `ablation_figure`, rendered to PNG.

Target: < 5 s for 1,482 sessions (load + score + statistics + figure), growth linear or
better (time per session not rising with N). "again" is a rerun's path: scoring that finds
the scores stored, the score table, statistics and the figure. Each stage is timed twice:
wall clock, and the process's CPU time (user + system, every thread), which is the figure
that does not depend on what the machine's other users are doing.

    PYTHONPATH=. .venv/bin/python benchmarks/analysis.py [--sizes 150,1482,15000] [--budget 30]
        [--compare-max 1482]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchmodel as bm
import numpy as np
import pandas as pd

from colabkit.analysis import ablation_figure, contrasts, figure_bytes, power_table, study_table
from colabkit.evaluation import load_scores, score_results
from colabkit.evaluation import runner as evaluation_runner
from colabkit.session import SessionSpec
from colabkit.store import load_events, load_sessions
from colabkit.tasks import load_tasks
from colabkit.team import VARIANT_NAMES

TARGET_S = 5.0
REFERENCE = 1482


async def templates(out: Path, budget: int) -> dict[str, Path]:
    """One stored session per variant, from the bench model (the clones' source)."""
    bm.install()
    return {name: await bm.arecord_session(bm.spec(name, 0, budget=budget), bm.task(), out=out)
            for name in VARIANT_NAMES}


def clone(template: Path, out: Path, task_id: str, seed: int) -> None:
    """A copy of `template` as the session (task_id, seed): record, events and ids rewritten."""
    record = json.loads((template / "session.json").read_bytes())
    old_id = record["session_id"]
    spec = SessionSpec.model_validate({**record["spec"], "task_id": task_id, "seed": seed})
    identity = spec.identity()
    new_id = spec.session_id
    record.update(session_id=new_id, spec_identity=identity, task_id=task_id, seed=seed,
                  spec=spec.model_dump(mode="json"))
    folder = out / new_id
    folder.mkdir()
    events = (template / "events.jsonl").read_bytes().replace(old_id.encode(), new_id.encode())
    events = events.replace(f'"task_id":"{record["spec"]["task_id"]}"'.encode(), f'"task_id":"{task_id}"'.encode())
    (folder / "events.jsonl").write_bytes(events)
    os.link(template / "snapshot.json", folder / "snapshot.json")  # same bytes for every clone: share them
    (folder / "session.json").write_text(json.dumps(record), encoding="utf-8")


def synthesise(sources: dict[str, Path], out: Path, n: int) -> None:
    tasks = list(load_tasks().ids)
    variants = list(sources)
    for i in range(n):
        variant = variants[i % len(variants)]
        task_id = tasks[(i // len(variants)) % len(tasks)]
        clone(sources[variant], out, task_id, seed=i // (len(variants) * len(tasks)))


def judged_values(scores: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The judged metrics as seeded synthetic values with a small effect per structure."""
    rng = np.random.default_rng(seed)
    effect = {"single": 0.0, "default": 0.02, "scaffolded": 0.05, "memory": 0.04, "preassigned": 0.03}
    shift = scores["structure"].map(effect).fillna(0.0).to_numpy()
    n = len(scores)
    delivered = rng.random(n) < 0.9
    performance = np.clip(0.3 + shift + rng.normal(0, 0.2, n), 0, 1)
    return scores.assign(
        delivered=delivered, performance=np.where(delivered, performance, np.nan),
        hms=np.where(delivered, performance * rng.uniform(0.5, 1, n), np.nan),
        h_init_norm=np.where(scores["composition"] == "none", np.nan, np.clip(rng.normal(0.6, 0.2, n), 0, 1)),
        s_hyp=np.clip(0.5 + shift + rng.normal(0, 0.15, n), 0, 1))


FIRST = ("load_sessions", "load_events", "score_work", "load_scores", "statistics", "figure")
AGAIN = ("score_again", "load_scores", "statistics", "figure")


def timed(times: dict[str, float], cpu: dict[str, float], stage: str, fn: Callable[[], Any]) -> Any:
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    times[stage], cpu[stage] = time.perf_counter() - t0, time.process_time() - c0
    return value


def score_writing_each_file_alone(sources: dict[str, Path], out: Path, n: int) -> tuple[float, float]:
    """Wall and CPU seconds of the first-time scoring as it was before `AtomicBatch` (each
    score file written on its own: data fsync, rename, folder fsync), on a twin of the same
    sessions in the same run: the side-by-side before/after."""
    out.mkdir()
    synthesise(sources, out, n)
    original = evaluation_runner.AtomicBatch
    evaluation_runner.AtomicBatch = lambda: contextlib.nullcontext(None)  # type: ignore[assignment,misc]
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        score_results(out, metrics=["work"])
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        evaluation_runner.AtomicBatch = original  # type: ignore[misc]
        shutil.rmtree(out)


def one_size(sources: dict[str, Path], n: int, root: Path, compare: bool) -> dict[str, Any]:
    out = root / f"n{n}"
    out.mkdir()
    t0 = time.perf_counter()
    synthesise(sources, out, n)
    made = time.perf_counter() - t0
    load_before = os.getloadavg()[0]
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    timed(times, cpu, "load_sessions", lambda: load_sessions(out))
    timed(times, cpu, "load_events", lambda: load_events(out))
    timed(times, cpu, "score_work", lambda: score_results(out, metrics=["work"]))
    if compare:
        times["score_work_each_file_alone"], cpu["score_work_each_file_alone"] = \
            score_writing_each_file_alone(sources, root / f"n{n}-each", n)
    timed(times, cpu, "score_again", lambda: score_results(out, metrics=["work"]))  # finds every score stored
    scores = timed(times, cpu, "load_scores", lambda: load_scores(out))
    table = judged_values(scores)
    timed(times, cpu, "statistics", lambda: (study_table(table), contrasts(table), power_table(table)))
    timed(times, cpu, "figure", lambda: figure_bytes(ablation_figure(table), "png"))
    shutil.rmtree(out)
    total, total_cpu = sum(times[k] for k in FIRST), sum(cpu[k] for k in FIRST)
    return {"sessions": n, "synthesise_s": made, "stages_s": times, "stages_cpu_s": cpu,
            "total_s": total, "total_cpu_s": total_cpu, "reanalysis_s": sum(times[k] for k in AGAIN),
            "reanalysis_cpu_s": sum(cpu[k] for k in AGAIN), "ms_per_session": 1000 * total / n,
            "cpu_ms_per_session": 1000 * total_cpu / n, "load_1min": [load_before, os.getloadavg()[0]],
            "rows": len(scores), "work_present": int(scores["w_total"].notna().sum()) if "w_total" in scores else 0}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="150,1482,15000")
    parser.add_argument("--budget", type=int, default=30, help="task-phase steps per side of the template sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-max", type=int, default=REFERENCE,
                        help="largest size also scored the old way (each file written alone), for the ratio")
    args = parser.parse_args(argv)
    random.seed(args.seed)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="colabkit-analysis-") as tmp:
        root = Path(tmp)
        sources = asyncio.run(templates(root / "templates", args.budget))
        for n in sizes:
            row = one_size(sources, n, root, compare=n <= args.compare_max)
            rows.append(row)
            stages = "  ".join(f"{k} {v:.2f}/{row['stages_cpu_s'][k]:.2f}" for k, v in row["stages_s"].items())
            print(f"{n:6d} sessions: total {row['total_s']:7.2f} s (CPU {row['total_cpu_s']:.2f} s), "
                  f"again {row['reanalysis_s']:6.2f} s (CPU {row['reanalysis_cpu_s']:.2f} s) "
                  f"({row['ms_per_session']:.2f} ms/session, CPU {row['cpu_ms_per_session']:.2f}; "
                  f"{row['work_present']} scored; load {row['load_1min'][0]:.1f}-{row['load_1min'][1]:.1f})\n"
                  f"        wall/CPU s: {stages}", flush=True)
    reference = next((r for r in rows if r["sessions"] == REFERENCE), None)
    per = [r["ms_per_session"] for r in rows]
    per_cpu = [r["cpu_ms_per_session"] for r in rows]
    linear = all(later <= 1.2 * earlier for earlier, later in itertools.pairwise(per))
    linear_cpu = all(later <= 1.2 * earlier for earlier, later in itertools.pairwise(per_cpu))
    met = reference is not None and reference["total_s"] < TARGET_S
    met_cpu = reference is not None and reference["total_cpu_s"] < TARGET_S
    if reference is not None:
        print(f"{REFERENCE} sessions: {reference['total_s']:.2f} s the first time, CPU {reference['total_cpu_s']:.2f} s "
              f"(target < {TARGET_S:g} s: wall {'met' if met else 'NOT met'}, CPU {'met' if met_cpu else 'NOT met'}); "
              f"again, scores stored: {reference['reanalysis_s']:.2f} s, CPU {reference['reanalysis_cpu_s']:.2f} s")
        if "score_work_each_file_alone" in reference["stages_s"]:
            print(f"scoring, batch / each file alone: wall {reference['stages_s']['score_work']:.2f} / "
                  f"{reference['stages_s']['score_work_each_file_alone']:.2f} s, CPU "
                  f"{reference['stages_cpu_s']['score_work']:.2f} / {reference['stages_cpu_s']['score_work_each_file_alone']:.2f} s")
    steps = " -> ".join(str(r["sessions"]) for r in rows)
    print(f"growth {steps}: ms per session {' -> '.join(f'{p:.2f}' for p in per)} "
          f"({'linear or better' if linear else 'worse than linear'}); CPU ms per session "
          f"{' -> '.join(f'{p:.2f}' for p in per_cpu)} ({'linear or better' if linear_cpu else 'worse than linear'})")
    bm.write_result("analysis", {"command": " ".join(["benchmarks/analysis.py", *sys.argv[1:]]),
                                 "target_s": TARGET_S, "met": met, "met_cpu": met_cpu,
                                 "growth_linear_or_better": linear, "growth_cpu_linear_or_better": linear_cpu,
                                 "sizes": rows,
                                 "note": "judged metrics are synthetic values (no judge runs); W_total/W_human scored; "
                                         "*_cpu_s is the process's CPU time (user + system, all threads)"})


if __name__ == "__main__":
    main()
