"""Where the embedded model's time goes: tokens/s per schema the suite asks for, and the build phase.

The suite asks the embedded model (SmolLM2-135M, llama.cpp in-process) for a few structured
answers: a ReAct step, a memory proposal (with and without a gate table), the ratification
answer, judge verdicts. Their cost depends on the answer's length (bounded by the schema), on
the context it is decoded over (attention is quadratic-ish in practice on CPU) and on how
llama.cpp's compute threads are scheduled. This script measures, for each schema, at the
context lengths a session really reaches: prompt and completion tokens, wall seconds,
completion tokens/s, CPU seconds per completion token (robust to other load on the machine)
and the share of schema-valid answers; then the wall time of a real scaffolded-dr build phase
on a demo task with its share of valid build answers.

Side-by-side configurations make the ratios meaningful on a shared machine: `--threads 1 2`
and `--kv f16 q8_0` run each schema under each setting in the same process.

Run on demand (several minutes on 2 cores):
    .venv/bin/python benchmarks/embedded.py [--threads 1 2] [--kv f16] [--repeats 2] [--skip-build]
    .venv/bin/python benchmarks/embedded.py --json benchmarks/results/embedded.json
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from colabkit.llm import Gateway, ModelConfig, StructuredOutputError
from colabkit.llm.local import shared_local_provider
from colabkit.session.actions import StepSchema
from colabkit.team.memory import MemoryProposal, MemorySlots

CSV_ROWS = {"short": 8, "medium": 48, "long": 110}
SCHEMAS: dict[str, type[BaseModel]] = {"step": StepSchema, "memory_slots": MemorySlots, "memory_proposal": MemoryProposal}


def csv_excerpt(rows: int) -> str:
    lines = ["site_id,region,period,depth_cm,artifact_count,ceramic_share,radiocarbon_bp"]
    for i in range(rows):
        lines.append(f"S{i:03d},{['north', 'south', 'east', 'west'][i % 4]},{['early', 'middle', 'late'][i % 3]},"
                     f"{20 + (i * 7) % 180},{(i * 37) % 211},{((i * 13) % 100) / 100:.2f},{2400 + (i * 53) % 3100}")
    return "\n".join(lines)


def messages(schema: str, rows: int) -> list[dict[str, str]]:
    """A prompt shaped like the suite's: persona and protocol, then task, briefing and data."""
    ask = {"step": "What is your next action?",
           "memory_slots": "Propose the team's shared memory: expertise, responsibility, plan, evidence standards.",
           "memory_proposal": "Propose the team's shared memory and which actions need whose approval."}[schema]
    return [{"role": "system", "content": "You are a member of a small research team working in a shared "
                                          "Jupyter workspace. Reply with one JSON object only."},
            {"role": "user", "content": "Task: how does the share of ceramic artifacts change with site depth "
                                        "across periods?\nBriefing: data/sites.csv, one row per excavation site.\n"
                                        f"{csv_excerpt(rows)}\n{ask}"}]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure_schema(gateway: Gateway, name: str, context: str, repeats: int) -> dict[str, Any]:
    """One cold call (prefill) and `repeats` warm calls of the same prompt with new samples."""
    schema = SCHEMAS[name]
    config = ModelConfig(temperature=0.7)
    prompt = messages(name, CSV_ROWS[context])
    rows = []
    for sample in range(repeats + 1):
        start_wall, start_cpu = time.perf_counter(), cpu_seconds()
        try:
            _, records = await gateway.structured(config, prompt, schema, caller=f"bench-{name}-{context}", sample=sample)
            valid = True
        except StructuredOutputError as exc:
            records, valid = exc.records, False
        wall, cpu = time.perf_counter() - start_wall, cpu_seconds() - start_cpu
        completion = sum(r.completion_tokens for r in records)
        rows.append({"sample": sample, "cold": sample == 0, "prompt_tokens": records[0].prompt_tokens if records else 0,
                     "completion_tokens": completion, "requests": len(records), "wall_s": wall, "cpu_s": cpu,
                     "valid": valid})
    warm = [r for r in rows if not r["cold"]] or rows
    tokens = sum(r["completion_tokens"] for r in warm)
    return {"schema": name, "context": context, "prompt_tokens": rows[0]["prompt_tokens"],
            "cold_wall_s": rows[0]["wall_s"],
            "warm_tokens_per_s": tokens / max(sum(r["wall_s"] for r in warm), 1e-9),
            "warm_cpu_s_per_token": sum(r["cpu_s"] for r in warm) / max(tokens, 1),
            "mean_completion_tokens": statistics.mean(r["completion_tokens"] for r in rows),
            "valid_share": sum(r["valid"] for r in rows) / len(rows), "calls": rows}


def bounded_step(max_chars: int) -> type[BaseModel]:
    """A step-shaped schema whose two strings are bounded at `max_chars` (a grammar of that depth)."""
    action = create_model(f"Action{max_chars}", type=(Literal["send_message", "execute_code", "finish"], ...),
                          content=(str, Field(max_length=max_chars)))
    return create_model(f"Step{max_chars}", thought=(str, Field(max_length=max_chars)), action=(action, ...))


async def measure_grammar_depth(gateway: Gateway, bounds: list[int], repeats: int) -> list[dict[str, Any]]:
    """Greedy decoding of one prompt under the same schema bounded at different depths.

    llama.cpp expands `maxLength: n` into n nested optional rules. At temperature 0 the text
    is the same under every bound the answer stays within, so any difference in CPU per
    token is the grammar's own cost; a bound whose text differs from the first bound's is flagged.
    """
    config = ModelConfig(temperature=0.0)
    prompt = [{"role": "system", "content": "You are a data analyst. Reply with one JSON object only."},
              {"role": "user", "content": "Data: data/sites.csv with columns region, depth_cm, ceramic_share. "
                                          "In two or three sentences each: your thought, then a message to the team."}]
    rows: list[dict[str, Any]] = []
    for repeat in range(repeats + 1):
        for bound in bounds:
            start_wall, start_cpu = time.perf_counter(), cpu_seconds()
            value, records = await gateway.structured(config, prompt, bounded_step(bound),
                                                      caller="bench-grammar", sample=repeat)
            wall, cpu = time.perf_counter() - start_wall, cpu_seconds() - start_cpu
            rows.append({"bound": bound, "repeat": repeat, "text": value.model_dump_json(),
                         "completion_tokens": sum(r.completion_tokens for r in records),
                         "prompt_tokens": sum(r.prompt_tokens for r in records), "wall_s": wall, "cpu_s": cpu})
    first = {r["repeat"]: r["text"] for r in rows if r["bound"] == bounds[0]}
    summary = []
    for bound in bounds:
        warm = [r for r in rows if r["bound"] == bound and r["repeat"] > 0]
        tokens = sum(r["completion_tokens"] for r in warm)
        summary.append({"bound": bound, "completion_tokens": warm[0]["completion_tokens"],
                        "same_text": all(r["text"] == first[r["repeat"]] for r in warm),
                        "cpu_s_per_token": sum(r["cpu_s"] for r in warm) / max(tokens, 1),
                        "wall_s_per_token": sum(r["wall_s"] for r in warm) / max(tokens, 1)})
    return summary


class BuildClock:
    """An event sink that notes this process's CPU seconds from the session's start to its last build event."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.start: float | None = None
        self.build_cpu_s = 0.0

    def emit(self, event: Any) -> None:
        now = cpu_seconds()
        self.start = now if self.start is None else self.start
        if event.phase == "build":
            self.build_cpu_s = now - self.start
        self.events.append(event)


async def measure_build_phase(seed: int) -> dict[str, Any]:
    """A real scaffolded-dr session on a demo task, stopped after one task action: the build phase's cost."""
    from colabkit.runner.build import build_session
    from colabkit.session import SessionSettings, run_session

    spec, task = build_session("demo_archaeology/0/0", "scaffolded-dr", seed,
                               settings=SessionSettings(action_budget=1, max_rounds=1))
    sink = BuildClock()
    gateway = Gateway()
    start_cpu = cpu_seconds()
    try:
        await run_session(spec, task, gateway=gateway, sink=sink)
    finally:
        gateway.close()
    build = [e for e in sink.events if e.phase == "build"]
    answers = [e for e in build if e.participant != "system"]
    calls = [c for e in build for c in e.llm_calls]
    completion = sum(c.completion_tokens for c in calls)
    return {"build_wall_s": build[-1].time - sink.events[0].time if build else 0.0,
            "build_llm_s": sum(c.latency_s for c in calls),
            # the build's model calls and the one task step after it; the kernel is another process
            "session_cpu_s": cpu_seconds() - start_cpu,
            "build_cpu_s": sink.build_cpu_s,
            "build_answers": len(answers),
            "valid_share": sum(e.status != "failed_step" for e in answers) / max(len(answers), 1),
            "completion_tokens": completion, "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "answers": [{"participant": e.participant, "action": e.action, "status": e.status,
                         "prompt_tokens": sum(c.prompt_tokens for c in e.llm_calls),
                         "completion_tokens": sum(c.completion_tokens for c in e.llm_calls),
                         "llm_s": sum(c.latency_s for c in e.llm_calls), "calls": len(e.llm_calls)}
                        for e in answers]}


def configure(threads: int, batch_threads: int, kv: str) -> None:
    """Point the process-wide embedded provider at one configuration (closing open contexts)."""
    provider = shared_local_provider()
    provider.close()
    provider._weights.clear()  # their compute slots were sized for the previous thread count
    provider.n_threads, provider.n_threads_batch, provider.kv_type = threads, batch_threads, kv
    provider.parallel = max(1, len(os.sched_getaffinity(0)) // threads)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": {"platform": platform.platform(), "cpus": len(os.sched_getaffinity(0)),
                                           "python": platform.python_version()},
                               "schemas": [], "build": []}
    for threads, batch_threads, kv in itertools.product(args.threads, args.batch_threads, args.kv):
        configure(threads, batch_threads, kv)
        gateway = Gateway()
        if args.grammar_bounds:
            for row in await measure_grammar_depth(gateway, args.grammar_bounds, args.repeats):
                row.update(threads=threads, batch_threads=batch_threads, kv=kv)
                results.setdefault("grammar", []).append(row)
                print(f"threads={threads}/{batch_threads} kv={kv:5} grammar maxLength={row['bound']:5} "
                      f"len={row['completion_tokens']:4} same text={row['same_text']} "
                      f"cpu/token={row['cpu_s_per_token'] * 1000:5.1f} ms "
                      f"wall/token={row['wall_s_per_token'] * 1000:5.1f} ms", flush=True)
        for name in [] if args.skip_schemas else args.schemas:
            for context in args.contexts:
                row = await measure_schema(gateway, name, context, args.repeats)
                row.update(threads=threads, batch_threads=batch_threads, kv=kv)
                results["schemas"].append(row)
                print(f"threads={threads}/{batch_threads} kv={kv:5} {name:16} {context:6} prompt={row['prompt_tokens']:5} "
                      f"cold={row['cold_wall_s']:6.1f}s warm={row['warm_tokens_per_s']:5.1f} tok/s "
                      f"cpu/token={row['warm_cpu_s_per_token'] * 1000:5.0f} ms "
                      f"len={row['mean_completion_tokens']:5.0f} valid={row['valid_share']:.0%}", flush=True)
        gateway.close()
        for seed in [] if args.skip_build else args.seeds:
            build = await measure_build_phase(seed=seed)
            build.update(threads=threads, batch_threads=batch_threads, kv=kv, seed=seed)
            results["build"].append(build)
            print(f"threads={threads}/{batch_threads} kv={kv:5} seed={seed} build phase (scaffolded-dr, demo task): "
                  f"{build['build_wall_s']:.1f} s wall, {build['build_llm_s']:.1f} s in the model, "
                  f"{build['build_cpu_s']:.1f} CPU-s, {build['build_answers']} answers, "
                  f"{build['completion_tokens']} completion tokens, valid={build['valid_share']:.0%}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[shared_local_provider().n_threads])
    parser.add_argument("--batch-threads", type=int, nargs="+", default=[shared_local_provider().n_threads_batch],
                        help="threads for prompt prefill (llama.cpp's n_threads_batch)")
    parser.add_argument("--kv", nargs="+", default=[shared_local_provider().kv_type], choices=["f16", "q8_0"])
    parser.add_argument("--schemas", nargs="+", default=list(SCHEMAS), choices=list(SCHEMAS))
    parser.add_argument("--contexts", nargs="+", default=["short", "long"], choices=list(CSV_ROWS))
    parser.add_argument("--repeats", type=int, default=2, help="warm calls per schema and context")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="build phases to run (answer lengths, hence times, vary with the seed)")
    parser.add_argument("--skip-schemas", action="store_true", help="only the build phase (and grammar depths)")
    parser.add_argument("--grammar-bounds", type=int, nargs="*", default=[],
                        help="also compare grammar depths: maxLength values, e.g. 120 600")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
