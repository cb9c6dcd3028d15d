"""Cold vs warm latency of a ReAct-sized step on the embedded model, two callers alternating.

A session alternates participants (AI agent, simulated analyst, ...), each with its own
~1500-token prompt that grows by one answer and one observation per step. The first step
of a caller is cold (full prefill); later steps should only prefill what was appended,
because the embedded provider keeps one llama context per caller. Target: warm <= 0.3x cold.

The baseline replays the same steps with both callers sharing one context (what a single
`Llama` without per-caller contexts would do): every switch is a full prefill again.

Run on demand (about 2-3 minutes on 2 cores):
    .venv/bin/python benchmarks/llm_step.py [--steps 3] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Literal

from pydantic import BaseModel, Field

from colabkit.llm import Gateway, ModelConfig

TARGET_RATIO = 0.3
CSV_ROWS = 48


class Action(BaseModel):
    type: Literal["send_message", "execute_code", "edit_result", "finish", "wait"]
    content: str = Field(max_length=300)


class Step(BaseModel):
    thought: str = Field(max_length=200)
    action: Action


def csv_excerpt() -> str:
    regions = ["north", "south", "east", "west"]
    lines = ["site_id,region,period,depth_cm,artifact_count,ceramic_share,radiocarbon_bp"]
    for i in range(CSV_ROWS):
        lines.append(f"S{i:03d},{regions[i % 4]},{['early', 'middle', 'late'][i % 3]},"
                     f"{20 + (i * 7) % 180},{(i * 37) % 211},{((i * 13) % 100) / 100:.2f},"
                     f"{2400 + (i * 53) % 3100}")
    return "\n".join(lines)


def system_prompt(persona: str) -> str:
    return (
        f"You are {persona}, working in a shared data-analysis workspace with a team.\n"
        "Tools: a Jupyter kernel (execute_code), a team chat (send_message), a result "
        "editor holding the team's hypothesis (edit_result), finish when the hypothesis is "
        "supported by evidence, wait when you have nothing to add.\n"
        "Each turn reply with one JSON object: a short thought, then one action with its "
        "type and content (code, a message, or the hypothesis text).\n\n"
        "Task: using data/sites.csv, find how the share of ceramic artifacts changes with "
        "site depth across periods, and state a hypothesis that is supported by a "
        "statistical test.\nDataset sites.csv: excavation sites; columns site_id, region, "
        "period (early/middle/late), depth_cm, artifact_count, ceramic_share (0-1), "
        "radiocarbon_bp.\nFirst rows:\n" + csv_excerpt())


def observation(step: int, caller: str) -> str:
    return (f"Observation after step {step} ({caller}): cell {step} ran.\n"
            "   period  mean_share  n\n0   early  0.48  16\n1  middle  0.51  16\n"
            "2    late  0.47  16\nPearson r(depth_cm, ceramic_share) = -0.08, p = 0.59. "
            "What is your next action?")


async def run(steps: int, shared_context: bool) -> tuple[list[float], list[float]]:
    gateway = Gateway()
    config = ModelConfig(temperature=0.7, seed=0)
    await gateway.complete(config.model_copy(update={"max_tokens": 1}),
                           [{"role": "user", "content": "hi"}], caller="warmup")
    personas = {"agent": "the AI research assistant", "analyst": "Dana, a data analyst"}
    chats = {name: [{"role": "system", "content": system_prompt(persona)},
                    {"role": "user", "content": "Start: what is your first action?"}]
             for name, persona in personas.items()}
    cold: list[float] = []
    warm: list[float] = []
    print(f"{'step':>4} {'caller':>8} {'kind':>5} {'prompt':>7} {'output':>7} {'seconds':>8}")
    for step in range(1, steps + 1):
        for name, chat in chats.items():
            caller = "shared" if shared_context else name
            answer, records = await gateway.structured(config, chat, Step, caller=caller)
            seconds = sum(r.latency_s for r in records)
            kind = "cold" if step == 1 else "warm"
            (cold if step == 1 else warm).append(seconds)
            print(f"{step:>4} {name:>8} {kind:>5} {records[-1].prompt_tokens:>7} "
                  f"{sum(r.completion_tokens for r in records):>7} {seconds:>8.2f}", flush=True)
            chat.append({"role": "assistant", "content": answer.model_dump_json()})
            chat.append({"role": "user", "content": observation(step, name)})
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="steps per caller (>= 2)")
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    steps = max(2, args.steps)
    print("== per-caller contexts (colabkit default)")
    cold, warm = asyncio.run(run(steps, shared_context=False))
    ratio = statistics.mean(warm) / statistics.mean(cold)
    print(f"cold mean {statistics.mean(cold):.2f} s, warm mean {statistics.mean(warm):.2f} s, "
          f"warm/cold ratio {ratio:.2f} (target <= {TARGET_RATIO}: "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    if not args.skip_baseline:
        print("== baseline: both callers share one context")
        base_cold, base_warm = asyncio.run(run(steps, shared_context=True))
        print(f"cold mean {statistics.mean(base_cold):.2f} s, later steps mean "
              f"{statistics.mean(base_warm):.2f} s, ratio "
              f"{statistics.mean(base_warm) / statistics.mean(base_cold):.2f}")


if __name__ == "__main__":
    main()
