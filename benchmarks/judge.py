"""The embedded judge on one stored session: where a scoring job's time goes (issue 21, item 4).

`colabkit score DIR` without `--judge` asks the embedded SmolLM2-135M every judge question.
On 2 cores its cost is what it prefills (~160 tok/s) and what it generates (~33 tok/s
constrained): a prompt token served from the judge's KV context costs next to nothing. This
makes (or reuses) one stored `default-dr` session of demo task `demo_archaeology/0/0` (seed
0, `--action-budget 6`, embedded model), copies it into a fresh results folder (fresh judge
cache, no stored sanity check) and scores it there in this process, as `colabkit score` does
(every metric, the embedded judge). It prints wall, CPU (user+sys of this process), the
1-minute load, judge requests and suite replays, and per judge prompt id: requests, prompt
tokens, those served from the KV context and those prefilled, completion tokens, seconds.

Prefilled tokens are counted where llama-cpp-python decides them: its `generate` keeps the
longest common token prefix of the context's current tokens and the new prompt, then calls
`Llama.eval` with the rest, then once per generated token. The first `eval` of a call is
therefore its prefill. The target is <= 180 s wall on 2 cores.

`make demo`'s time is `colabkit batch experiments/demo.yaml` into a fresh results folder
(`--demo`, timed as a subprocess, CPU of its children included; target <= 240 s).

    PYTHONPATH=. .venv/bin/python benchmarks/judge.py [--session-dir DIR]
        [--demo] [--label after]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "judge.json"
TARGET_SCORE_S = 180.0
TARGET_DEMO_S = 240.0
TASK, VARIANT, SEED, BUDGET = "demo_archaeology/0/0", "default-dr", "0", "6"


def _cli(*args: str, cwd: Path = ROOT) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "colabkit"), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def stored_session(session_dir: Path) -> Path:
    """The stored default-dr session's results folder, run once with the embedded model."""
    if not any(session_dir.glob("*/session.json")):
        session_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(_cli("run", "--task", TASK, "--variant", VARIANT, "--seed", SEED, "--action-budget", BUDGET,
                            "--out", str(session_dir), "--quiet"), check=True, env=_env(), cwd=ROOT)
    return session_dir


class _Meter:
    """Per judge call: the prompt id, prompt tokens, prefilled tokens, completion tokens, seconds."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def install(self) -> None:
        from llama_cpp import Llama

        from colabkit.llm.local import LocalLlamaProvider

        meter, eval_orig, completion_orig = self, Llama.eval, LocalLlamaProvider.completion

        def eval_counted(llm: Any, tokens: Any) -> Any:
            call = getattr(meter.local, "call", None)
            if call is not None and call["prefilled"] is None:
                call["prefilled"] = len(tokens)
            return eval_orig(llm, tokens)

        def completion_timed(provider: Any, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            params = kwargs.get("litellm_params") or (args[11] if len(args) > 11 else None) or {}
            caller = str((params.get("metadata") or {}).get("caller", "?"))
            call: dict[str, Any] = {"caller": caller, "prefilled": None}
            meter.local.call = call
            started = time.perf_counter()
            try:
                response = completion_orig(provider, model, messages, *args, **kwargs)
            finally:
                meter.local.call = None
            call["seconds"] = time.perf_counter() - started
            usage = response.usage  # type: ignore[attr-defined]
            call["prompt_tokens"], call["completion_tokens"] = usage.prompt_tokens, usage.completion_tokens
            call["prefilled"] = call["prefilled"] or 0
            with meter.lock:
                meter.calls.append(call)
            return response

        Llama.eval = eval_counted  # type: ignore[method-assign]
        LocalLlamaProvider.completion = completion_timed  # type: ignore[method-assign]

    def by_prompt(self) -> dict[str, dict[str, float]]:
        rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for call in self.calls:
            row = rows[call["caller"].removeprefix("judge:")]
            row["requests"] += 1
            row["prompt_tokens"] += call["prompt_tokens"]
            row["prefilled"] += call["prefilled"]
            row["from_context"] += call["prompt_tokens"] - call["prefilled"]
            row["completion_tokens"] += call["completion_tokens"]
            row["seconds"] += call["seconds"]
        return {k: {m: round(v, 1) for m, v in row.items()} for k, row in sorted(rows.items())}


def score_once(session_dir: Path) -> dict[str, Any]:
    """Score a copy of the stored session with the embedded judge; the figures."""
    from colabkit.evaluation import score_results

    meter = _Meter()
    meter.install()
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        results = Path(tmp) / "results"
        shutil.copytree(session_dir, results, ignore=shutil.ignore_patterns("judge-cache", "judge-checks", "scores",
                                                                            "*.parquet"))
        load0, cpu0, wall0 = os.getloadavg()[0], resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        report = score_results(results)
        wall, cpu1, load1 = time.perf_counter() - wall0, resource.getrusage(resource.RUSAGE_SELF), os.getloadavg()[0]
        spend = report.spend.model_dump(mode="json") if report.spend is not None else {}
        sanity = report.sanity.reason if report.sanity is not None else None
    per_prompt = meter.by_prompt()
    totals = {m: round(sum(row[m] for row in per_prompt.values()), 1)
              for m in ("requests", "prompt_tokens", "prefilled", "from_context", "completion_tokens", "seconds")}
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1),
            "load_1min": [round(load0, 2), round(load1, 2)], "scored": report.scored,
            "incomplete": report.incomplete, "sanity": sanity, "spend": spend, "model_calls": totals,
            "per_prompt": per_prompt, "target_s": TARGET_SCORE_S, "met": wall <= TARGET_SCORE_S}


def demo_once() -> dict[str, Any]:
    """`colabkit batch experiments/demo.yaml` (= `make demo` after setup) into a fresh results folder."""
    with tempfile.TemporaryDirectory(prefix="judge-demo-") as tmp:
        experiment = Path(tmp) / "demo.yaml"
        text = (ROOT / "experiments" / "demo.yaml").read_text()
        experiment.write_text(text.replace("results: ../results", f"results: {tmp}/results"))
        load0, wall0 = os.getloadavg()[0], time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(_cli("batch", str(experiment)), env=_env(), cwd=ROOT, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall, load1 = time.perf_counter() - wall0, os.getloadavg()[0]
    return {"wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "load_1min": [round(load0, 2), round(load1, 2)], "returncode": done.returncode,
            "tail": done.stdout.splitlines()[-12:] + done.stderr.splitlines()[-3:],
            "target_s": TARGET_DEMO_S, "met": wall <= TARGET_DEMO_S and done.returncode == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--session-dir", type=Path, default=Path(tempfile.gettempdir()) / "colabkit-judge-bench",
                        help="where the stored default-dr session is made once and reused")
    parser.add_argument("--demo", action="store_true", help="also time `colabkit batch experiments/demo.yaml`")
    parser.add_argument("--skip-score", action="store_true", help="only the demo batch")
    parser.add_argument("--label", default="run", help="name of this run in results/judge.json")
    args = parser.parse_args()
    out: dict[str, Any] = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                                    capture_output=True, text=True).stdout.strip()}
    if not args.skip_score:
        out["score"] = score_once(stored_session(args.session_dir))
        s = out["score"]
        print(f"score one default-dr session: wall {s['wall_s']} s (target {TARGET_SCORE_S:.0f} s: "
              f"{'met' if s['met'] else 'NOT met'}), CPU {s['cpu_s']} s, load {s['load_1min']}")
        print(f"  judge requests {s['spend'].get('requests')}, suite replays {s['spend'].get('suite_replays')}; "
              f"sanity: {s['sanity']}; incomplete scores {s['incomplete']}")
        print(f"  {'prompt id':<24}{'req':>5}{'prompt':>8}{'ctx':>8}{'prefill':>9}{'compl':>7}{'sec':>8}")
        for name, row in [*s["per_prompt"].items(), ("TOTAL", s["model_calls"])]:
            print(f"  {name:<24}{row['requests']:>5.0f}{row['prompt_tokens']:>8.0f}{row['from_context']:>8.0f}"
                  f"{row['prefilled']:>9.0f}{row['completion_tokens']:>7.0f}{row['seconds']:>8.1f}")
    if args.demo:
        out["demo"] = d = demo_once()
        print(f"make demo (colabkit batch experiments/demo.yaml): wall {d['wall_s']} s (target {TARGET_DEMO_S:.0f} s: "
              f"{'met' if d['met'] else 'NOT met'}), CPU {d['cpu_s']} s (children), load {d['load_1min']}, "
              f"exit {d['returncode']}")
    RESULTS.parent.mkdir(exist_ok=True)
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored[args.label] = out
    RESULTS.write_text(json.dumps(stored, indent=1) + "\n")
    print(f"written to {RESULTS} under {args.label!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
