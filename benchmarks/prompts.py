"""Prompt tokens through a session: size per call, growth with the session, and prefix reuse.

Prompt growth decides an API bill. Whole sessions run with the scripted bench model and a
real kernel, under the compact and the full observation profile; every step prompt is
captured and counted in tokens (tiktoken cl100k_base, the tokenizer litellm bundles, so
offline). Figures:

- tokens per call, per participant and per session;
- growth: the exponent b of (tokens - first prompt's) ~ (events - events at the first
  prompt)^b, fitted per participant (target: b <= 1, linear or better in the number of
  events; 1.1 allowed for the fit's noise);
- prefix reuse: the share of each prompt (in tokens) equal to a prefix of the same
  participant's previous prompt, i.e. what a provider's prefix cache can serve (target:
  >= 90% under the full profile); "uncached tokens" is the rest, the part a provider bills
  at the full rate; "kept" is the share of the previous prompt that the new one starts
  with (100% when a prompt only appends to the last one), "ceil" the reuse a pure append
  would reach (what is new since the previous prompt caps it).

The baseline is a full-snapshot prompt in Co-Gym's style, built here from the same session
state at the same moments: the task description, then the observation dict as JSON (the
notebook's last 5 cells as one `Code block:/Output:` string, the result editor), then the
whole chat, the participant's own action history and its last 8 thoughts (Co-Gym's
`process_observation`, `utils/context_processing.py`; see the team's research notes, `cogym.md`). Ratios are ours over
the baseline, measured side by side in one run.

    PYTHONPATH=. .venv/bin/python benchmarks/prompts.py [--variants default-dr,scaffolded-dr,single]
        [--budget 30] [--window 128000]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchmodel as bm
import litellm

from colabkit.llm import Gateway
from colabkit.session import ListSink, engine, run_session
from colabkit.session.prompting.views import cell_output

TARGET_REUSE = 0.90
GROWTH_MAX = 1.1  # the fitted exponent's tolerance for linear (noise of a step-shaped series)
COGYM_CELLS = 5
COGYM_NOTES = 8  # the baseline's scratchpad: the last 8 thoughts, fixed so it does not move with our layout
encode = litellm.encoding.encode


def cogym_prompt(system: str, kwargs: dict[str, Any]) -> list[dict[str, str]]:
    """A full-snapshot prompt as Co-Gym builds one, from the state `build_observation` sees."""
    ws, pid = kwargs["workspace"], kwargs["participant"]
    history = "\n".join(f"Code block:\n{c.code}\nOutput:\n{cell_output(c)}" for c in ws.cells[-COGYM_CELLS:])
    observation = {"jupyter_history": history, "result_editor": ws.editor.text}
    chat = ws.chat.messages if kwargs["sees_all"] else ws.chat.visible_to(pid)
    own = [f"{e.action}({json.dumps(e.args, ensure_ascii=False)})" for e in kwargs["events"]
           if e.participant == pid and e.phase == "task"]
    user = (f"Task description:\n{kwargs['briefing']}\n\nObservation:\n{json.dumps(observation, indent=2)}\n\n"
            "Chat history:\n" + "\n".join(f"{m.sender}: {m.text}" for m in chat)
            + "\n\nYour action history:\n" + "\n".join(own)
            + "\n\nScratchpad:\n" + "\n".join(t.line() for t in kwargs["scratchpad"][-COGYM_NOTES:]))
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def tokens(messages: Sequence[dict[str, Any]]) -> list[int]:
    return encode("".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages), disallowed_special=())


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def growth_exponent(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """b in y ~ x^b by least squares on logs (None with fewer than 3 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 3:
        return None
    mx, my = statistics.mean(p[0] for p in pts), statistics.mean(p[1] for p in pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else None


def series_stats(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Per participant: tokens per call, growth exponent, reuse; and the session's totals."""
    per: dict[str, Any] = {}
    total = uncached = 0
    reuse_all: list[float] = []
    weighted_num = weighted_den = 0
    kept: list[float] = []  # share of the previous prompt reused: 100% for a pure append
    ceiling: list[float] = []  # the reuse a pure append would give: what is new since the last prompt
    for pid in dict.fromkeys(c["pid"] for c in calls):
        mine = [c for c in calls if c["pid"] == pid]
        sizes = [len(c["tokens"]) for c in mine]
        shared = [common_prefix(prev["tokens"], cur["tokens"]) for prev, cur in itertools.pairwise(mine)]
        reuse = [n / size for n, size in zip(shared, sizes[1:])]
        fresh = sizes[0] + sum(size - n for n, size in zip(shared, sizes[1:]))
        weighted_num += sum(shared)
        kept += [n / size for n, size in zip(shared, sizes[:-1])]
        ceiling += [min(1.0, prev / size) for prev, size in itertools.pairwise(sizes)]
        weighted_den += sum(sizes[1:])
        # Growth of the part that varies (tokens past the first prompt) with the events since it:
        # 1 is linear, 2 quadratic; a fixed part (persona, briefing) would flatter a plain fit.
        x0, y0 = mine[0]["events"], sizes[0]
        per[pid] = {"calls": len(mine), "tokens_first": sizes[0], "tokens_last": sizes[-1],
                    "tokens_mean": statistics.mean(sizes), "tokens_max": max(sizes),
                    "growth_exponent": growth_exponent([c["events"] - x0 for c in mine], [y - y0 for y in sizes]),
                    "tokens_per_event": (sizes[-1] - sizes[0]) / max(mine[-1]["events"] - mine[0]["events"], 1),
                    "prefix_reuse_mean": statistics.mean(reuse) if reuse else None,
                    "prefix_reuse_min": min(reuse) if reuse else None, "uncached_tokens": fresh}
        total += sum(sizes)
        uncached += fresh
        reuse_all += reuse
    return {"participants": per, "calls": len(calls), "tokens_total": total,
            "tokens_per_call": total / max(len(calls), 1), "uncached_total": uncached,
            "prefix_reuse_mean": statistics.mean(reuse_all) if reuse_all else None,
            "prefix_reuse_token_weighted": weighted_num / weighted_den if weighted_den else None,
            "previous_prompt_kept_mean": statistics.mean(kept) if kept else None,
            "append_only_ceiling_mean": statistics.mean(ceiling) if ceiling else None}


async def capture(variant: str, window: int | None, budget: int, seed: int) -> dict[str, Any]:
    """Run one session; return our step prompts and the Co-Gym-style ones, token-counted."""
    model = bm.install()
    spec = bm.spec(variant, seed, context_window=window, budget=budget)
    latest: dict[str, dict[str, Any]] = {}
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    real = engine.build_observation

    def observe(**kwargs: Any) -> Any:
        latest[kwargs["participant"]] = {"kwargs": kwargs, "events": len(kwargs["events"])}
        return real(**kwargs)

    def on_call(pid: str, messages: list[dict[str, Any]], kind: str) -> None:
        if kind != "step":
            return
        seen = latest[pid]
        ours.append({"pid": pid, "events": seen["events"], "tokens": tokens(messages)})
        system = spec.variant.persona(pid).prompt
        theirs.append({"pid": pid, "events": seen["events"], "tokens": tokens(cogym_prompt(system, seen["kwargs"]))})

    model.on_call = on_call
    engine.build_observation = observe  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory(prefix="colabkit-prompts-") as tmp:
            result = await run_session(spec, bm.task(), gateway=Gateway(), sink=ListSink(), workdir_root=Path(tmp))
    finally:
        engine.build_observation = real
    return {"variant": variant, "profile": spec.profile.name, "ended_by": result.ended_by,
            "events": result.n_events, "ours": series_stats(ours), "cogym": series_stats(theirs)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="default-dr,scaffolded-dr,preassigned-dr,single")
    parser.add_argument("--budget", type=int, default=30, help="task-phase steps per side")
    parser.add_argument("--window", type=int, default=128_000, help="context window for the full profile")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    runs = []
    for variant in args.variants.split(","):
        for window in (None, args.window):
            runs.append(asyncio.run(capture(variant, window, args.budget, args.seed)))
    print(f"{'variant':<15}{'profile':<8}{'calls':>6}{'tok/call':>9}{'max':>7}{'growth b':>9}"
          f"{'reuse':>7}{'ceil':>6}{'tok-w':>7}{'kept':>6}{'uncached':>9} | {'Co-Gym tok/call':>15}{'reuse':>7}{'uncached':>9} | "
          f"{'tok ratio':>9}{'uncached ratio':>15}")
    verdicts: dict[str, Any] = defaultdict(list)
    for run in runs:
        ours, base = run["ours"], run["cogym"]
        exps = [p["growth_exponent"] for p in ours["participants"].values() if p["growth_exponent"] is not None]
        worst = max(exps) if exps else float("nan")
        run["growth_exponent_max"] = worst
        run["tokens_ratio"] = ours["tokens_total"] / base["tokens_total"]
        run["uncached_ratio"] = ours["uncached_total"] / base["uncached_total"]
        print(f"{run['variant']:<15}{run['profile']:<8}{ours['calls']:>6}{ours['tokens_per_call']:>9.0f}"
              f"{max(p['tokens_max'] for p in ours['participants'].values()):>7}{worst:>9.2f}"
              f"{ours['prefix_reuse_mean']:>7.0%}{ours['append_only_ceiling_mean']:>6.0%}{ours['prefix_reuse_token_weighted']:>7.0%}{ours['previous_prompt_kept_mean']:>6.0%}{ours['uncached_total']:>9} | {base['tokens_per_call']:>15.0f}"
              f"{base['prefix_reuse_mean']:>7.0%}{base['uncached_total']:>9} | {run['tokens_ratio']:>9.2f}"
              f"{run['uncached_ratio']:>15.2f}")
        verdicts["growth"].append(worst <= GROWTH_MAX)
        if run["profile"] == "full":
            verdicts["reuse"].append(ours["prefix_reuse_mean"] >= TARGET_REUSE)
    met = {"growth_linear_or_better": all(verdicts["growth"]), "prefix_reuse_full": all(verdicts["reuse"])}
    print(f"growth linear or better (b <= {GROWTH_MAX} for every participant): {'met' if met['growth_linear_or_better'] else 'NOT met'}")
    print(f"prefix reuse >= {TARGET_REUSE:.0%} under the full profile: {'met' if met['prefix_reuse_full'] else 'NOT met'}")
    bm.write_result("prompts", {"command": " ".join(["benchmarks/prompts.py", *sys.argv[1:]]),
                                "tokenizer": "tiktoken cl100k_base (litellm bundled)",
                                "target_reuse": TARGET_REUSE, "met": met, "runs": runs})


if __name__ == "__main__":
    main()
