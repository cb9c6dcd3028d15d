"""Contributions for the paper grid (issue 47): what the replays cost, and what they can detect.

**Cost.** The paper grid's parents are 13 variants x 38 tasks x 3 seeds. Every team session
(12 team variants) is replayed from its first task step without each human seat and, in the 9
variants with a structure, with the structure switched off, under `--replays` seeds each,
beside one control per seed (shared by the session's members). A continuation replays its
prefix (the memory build included) from the cache and asks its models anew for the whole
task phase: its calls are the step model's task-phase calls (`runner.estimate.session_model`,
the dry run's model, without the build), minus the removed member's steps for a removal.
Scoring a continuation asks the judge `estimate.judge_questions` for Performance and S_hyp
once. Dollars are litellm's DeepSeek prices (`plan.call_price`, the provider cache rate on
`estimate.CACHED_SHARE` of session prompts). The solo variants that strong synergy needs
(`solo-d`, `solo-r`: 2 x 38 x 3 sessions) are costed beside.

**Power.** A variant's contribution of a member is the mean of control - removal over 38
tasks x 3 parent seeds x `--replays` replay seeds, tested by the task-clustered t (one-sample
t on the task means, df 37; the 95% interval excludes 0). Scores are simulated on the study's
bounded data shape (`docs/statistics.md`: a latent normal clipped to [0, 1], task SD 0.8, task
x condition 0.3, noise 1 in units of 0.57 of the score, mean 0.7): the control and the removal
are two conditions of one task, the removal's latent mean shifted down; the contribution is the
observed mean difference. Beside it, the noncentral t at the simulated SD of the task means (a
check of the simulation: they agree where the task means are near normal).

    PYTHONPATH=. LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python benchmarks/contributions.py
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import time
from pathlib import Path

import numpy as np
from scipy import stats

from colabkit.llm import ModelConfig
from colabkit.runner.estimate import (
    CACHED_SHARE,
    JUDGE_COMPLETION_TOKENS,
    JUDGE_PROMPT_TOKENS,
    REPAIR_SHARE,
    judge_questions,
    session_model,
)
from colabkit.runner.plan import call_price
from colabkit.session import SessionSpec
from colabkit.session.structure.registry import structures_for
from colabkit.team import STUDY_VARIANT_NAMES, variant

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "contributions.json"
DEEPSEEK = ModelConfig(model="deepseek/deepseek-chat")
TASKS, SEEDS = 38, 3
SCALE, TASK_SD, CELL_SD, NOISE_SD, MEAN = 0.57, 0.8, 0.3, 1.0, 0.7


def spec(name: str) -> SessionSpec:
    return SessionSpec(task_id="archaeology/0/0", variant=variant(name), seed=0, models={"default": DEEPSEEK})


def cost(replays: int) -> dict:
    """Calls, tokens and dollars of every member's replays of the paper grid, and of the solo variants."""
    rows, calls, dollars, judge_calls = [], 0.0, 0.0, 0.0
    judge_price = call_price(DEEPSEEK, JUDGE_PROMPT_TOKENS, JUDGE_COMPLETION_TOKENS, 0.0) or 0.0
    for name in STUDY_VARIANT_NAMES:
        var = variant(name)
        if not var.humans:
            continue
        model = session_model(spec(name))
        task_calls = (model.ai_steps + model.human_steps) * (1 + REPAIR_SHARE)
        per_human = model.human_steps / len(var.humans) * (1 + REPAIR_SHARE)
        members = [*var.humans, *(["structure"] if structures_for(var) else [])]
        # per parent session: one control per replay seed, then each member's replays
        per_session = replays * (task_calls + sum(task_calls - (per_human if m != "structure" else 0.0)
                                                  for m in members))
        continuations = replays * (1 + len(members))
        price = call_price(DEEPSEEK, model.prompt_tokens, model.completion_tokens, CACHED_SHARE) or 0.0
        judged = continuations * judge_questions(spec(name), ("performance", "s_hyp"), 1)
        sessions = TASKS * SEEDS
        rows.append({"variant": name, "members": members, "continuations": sessions * continuations,
                     "calls": sessions * per_session, "dollars": sessions * per_session * price,
                     "judge_calls": sessions * judged, "judge_dollars": sessions * judged * judge_price})
        calls += sessions * per_session
        dollars += sessions * per_session * price
        judge_calls += sessions * judged
    solo = [session_model(spec(n)) for n in ("solo-d", "solo-r")]
    solo_calls = sum(m.calls for m in solo) * TASKS * SEEDS
    solo_dollars = sum(m.calls * (call_price(DEEPSEEK, m.prompt_tokens, m.completion_tokens, CACHED_SHARE) or 0.0)
                       for m in solo) * TASKS * SEEDS
    return {"replays_per_member": replays, "rows": rows, "continuations": sum(r["continuations"] for r in rows),
            "calls": calls, "dollars": dollars, "judge_calls": judge_calls,
            "judge_dollars": judge_calls * judge_price, "solo_sessions": 2 * TASKS * SEEDS,
            "solo_calls": solo_calls, "solo_dollars": solo_dollars}


def simulated_power(shift: float, replays: int, reps: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(observed contribution, P(the task-clustered 95% interval excludes 0), mean SD of the task
    means of control - removal) for a latent shift."""
    n = SEEDS * replays
    hits, observed, spread = 0, [], []
    for _ in range(reps):
        task = rng.normal(0, TASK_SD, (TASKS, 1))
        control = np.clip(MEAN + SCALE * (task + rng.normal(0, CELL_SD, (TASKS, 1)) + rng.normal(0, NOISE_SD, (TASKS, n))), 0, 1)
        removed = np.clip(MEAN + SCALE * (task - shift + rng.normal(0, CELL_SD, (TASKS, 1))
                                          + rng.normal(0, NOISE_SD, (TASKS, n))), 0, 1)
        means = (control - removed).mean(axis=1)
        observed.append(means.mean())
        spread.append(means.std(ddof=1))
        t = means.mean() / (means.std(ddof=1) / math.sqrt(TASKS))
        hits += abs(t) > stats.t.ppf(0.975, TASKS - 1)
    return float(np.mean(observed)), hits / reps, float(np.mean(spread))


def closed_form(delta: float, sd: float) -> float:
    """Power of the two-sided t on 38 task means of SD `sd` for a contribution `delta` (noncentral t)."""
    ncp, df = delta / (sd / math.sqrt(TASKS)), TASKS - 1
    crit = stats.t.ppf(0.975, df)
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replays", type=int, default=3, help="replay seeds per member and session")
    parser.add_argument("--reps", type=int, default=2000, help="simulated grids per shift")
    args = parser.parse_args()
    started = time.time()
    figures = cost(args.replays)
    print(f"paper grid, {args.replays} replay seeds: {figures['continuations']:,} continuations, "
          f"{figures['calls']:,.0f} model calls, ${figures['dollars']:,.0f}; scoring {figures['judge_calls']:,.0f} "
          f"judge calls, ${figures['judge_dollars']:,.0f}; solo variants {figures['solo_sessions']} sessions, "
          f"{figures['solo_calls']:,.0f} calls, ${figures['solo_dollars']:,.0f}")
    for row in figures["rows"]:
        print(f"  {row['variant']:<15} {'+'.join(row['members']):<14} {row['continuations']:>6,} continuations "
              f"{row['calls']:>9,.0f} calls ${row['dollars']:>7,.0f}")
    rng = np.random.default_rng(47)
    power = []
    for shift in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5):
        delta, p, sd = simulated_power(shift, args.replays, args.reps, rng)
        power.append({"latent_shift": shift, "contribution": delta, "power": p, "task_mean_sd": sd,
                      "closed_form": closed_form(delta, sd)})
        print(f"  contribution {delta:+.3f} (latent shift {shift}, SD of task means {sd:.3f}): power {p:.2f} "
              f"simulated, {power[-1]['closed_form']:.2f} noncentral t")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"cost": figures, "power": power, "reps": args.reps, "commit": commit,
                                   "seconds": time.time() - started}, indent=1))


if __name__ == "__main__":
    main()
