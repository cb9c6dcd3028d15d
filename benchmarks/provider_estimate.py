"""The dry run's estimate against what the sessions then asked for: the demo and the held rehearsal.

Two grids, each run as `colabkit batch --sessions-only` runs them (`run_experiment` in this
process), twice: first on seed 0 with nothing measured (the estimate is the step model's,
`colabkit.runner.estimate`), then on seed 1 with seed 0's figures stored (the estimate is
the measured one). Per run it records the estimate and the actual calls and tokens of the
sessions (`plan.compare`), and their ratio.

- `demo`: experiments/demo.yaml's settings on the embedded model (local/smollm2-135m),
  variants single and default-dr by default (the demo's four take longer than this
  benchmark may; `--variants`, `--runs 1` to fit a busy machine).
- `rehearsal`: the held provider rehearsal: every role on deepseek/deepseek-chat through
  litellm over HTTP to `provider_server.py` on 127.0.0.1 (DeepSeek's API as the rehearsal of
  issue 21 saw it; the bench model answers and never finishes, so a session runs its whole
  budgets), four variants (single, default-dr, memory-dr, preassigned-dr) at action budget 8.

The judge is not run (sessions only): its estimate is left unchecked here.

    PYTHONPATH=. .venv/bin/python benchmarks/provider_estimate.py --grid rehearsal
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from colabkit.runner import load_experiment, run_experiment
from colabkit.runner.plan import compare, make_plan

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results" / "provider_estimate.json"


def grid(name: str, folder: Path, seed: int, variants: list[str]) -> Path:
    """The experiment config of `name` for one seed, results under `folder`."""
    if name == "demo":
        data = yaml.safe_load((REPO / "experiments" / "demo.yaml").read_text())
        data.update(variants=variants or ["single", "default-dr"], seeds=[seed], results=str(folder / "results"))
    else:
        roles = {pid: {"model": "deepseek/deepseek-chat", "extra": {"extra_headers": {"X-Bench-Pid": pid}}}
                 for pid in ("ai", "D", "R")}
        data = {"name": "rehearsal", "tasks": {"ids": ["demo_archaeology/0/0"]},
                "variants": ["single", "default-dr", "memory-dr", "preassigned-dr"], "seeds": [seed],
                "models": {"default": roles["ai"], **roles}, "judge": "deepseek/deepseek-chat",
                "settings": {"action_budget": 8}, "concurrency": {"sessions": 4, "kernels": 4},
                "results": str(folder / "results")}
    path = folder / f"{name}-{seed}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def one_run(path: Path) -> dict[str, Any]:
    exp = load_experiment(path)
    items = exp.sessions()
    plan = make_plan(exp, items)
    started = time.time()
    run_experiment(exp, progress=False)
    lines = compare(exp, items, plan, started, retry_errors=False)
    stored = [json.loads(line) for line in (exp.results / "calibration.jsonl").read_text().splitlines()]
    comparison = stored[-1]["comparison"]
    est, act = comparison["estimated"]["sessions"], comparison["actual"]["sessions"]
    return {"sessions": len(items), "basis": plan.sessions.basis, "estimated": est, "actual": act,
            "calls_ratio": est["calls"] / act["calls"] if act["calls"] else None,
            "tokens_ratio": est["tokens"] / act["tokens"] if act["tokens"] else None,
            "seconds": round(time.time() - started, 1), "report": lines}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", choices=["demo", "rehearsal"], required=True)
    parser.add_argument("--variants", default="", help="demo only: these variants (default single,default-dr)")
    parser.add_argument("--runs", type=int, default=2, choices=[1, 2], help="1: the step model's run only")
    args = parser.parse_args(argv)
    server = None
    if args.grid == "rehearsal":
        server = subprocess.Popen([sys.executable, str(HERE / "provider_server.py"), "--latency", "0.05",
                                   "--fault-rate", "0", "--max-seconds", "600"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ,
                                  "PYTHONPATH": str(HERE)})
        assert server.stdout is not None
        base = f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}"
        os.environ["DEEPSEEK_API_BASE"], os.environ["DEEPSEEK_API_KEY"] = base, "sk-bench"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            variants = [v for v in args.variants.split(",") if v]
            runs = {"first (step model)": one_run(grid(args.grid, folder, 0, variants))}
            if args.runs == 2:
                runs["second (measured)"] = one_run(grid(args.grid, folder, 1, variants))
    finally:
        if server is not None:
            server.stdin.close() if server.stdin else None
            server.wait(30)
    for label, run in runs.items():
        print(f"{args.grid} {label}: {run['sessions']} sessions in {run['seconds']} s")
        print("\n".join(run["report"]))
    found = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    found[args.grid] = {"when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs}
    RESULTS.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
