"""What every metric name in a table or figure means, in one place a caption can point to.

The figures label panels with the paper's short names (H_init,norm, S_hyp, W_human, ...); a
reader who opens a saved PNG alone needs their meaning. `GLOSSARY` holds each metric's range
and one plain sentence, under the label `METRIC_LABELS` gives it (the scorers' docstrings and
docs/scoring.md have the full operationalisation); the docs page docs/glossary.md shows the same entries (a test keeps the
two together), `glossary_table` gives them to a notebook, and every ablation and contrast
figure's caption ends with `GLOSSARY_LINE`, which points there.
"""

from __future__ import annotations

import pandas as pd

from colabkit.analysis.scores import METRIC_LABELS

GLOSSARY_PAGE = "docs/glossary.md"
GLOSSARY_LINE = f"Metric names (Performance, HMS, H_init,norm, S_hyp, W_total, W_human, ...): see {GLOSSARY_PAGE}."

GLOSSARY: dict[str, tuple[str, str]] = {
    "performance": ("0 to 1", "Task score: 0 when no hypothesis was delivered, else the share of the "
                    "gold hypothesis' sub-hypotheses whose context the submitted one covers (Co-Gym's rating, judged)."),
    "hms": ("0 to 1", "Hypothesis match score (DiscoveryBench): context recall times the mean accuracy of the "
            "matched sub-hypotheses' variables and relations (judged)."),
    "delivered": ("0 to 1", "Share of sessions that delivered a non-empty hypothesis in the result "
                  "editor (per session 0 or 1; its mean is the delivery rate)."),
    "h_init_norm": ("0 to 1", "Initiative entropy: how evenly the team's members (the AI included) "
                    "initiated, over messages a judge finds take task or dialogue initiative, divided by its maximum "
                    "(the log of the team size); 1 = everyone equally, 0 = one member. Not defined for the single agent."),
    "h_init_events": ("0 to 1", "The same entropy over every event each member initiated in the task "
                      "phase (messages, cells, edits, proposals, decisions), no judge."),
    "a_profile": ("0 to 1", "Profile alignment: share of the humans' contributions a judge finds fit "
                  "their own persona's expertise (not the other's, not generic). Not defined for the single agent."),
    "c_wf": ("0 to 1", "Workflow coverage: share of the task family's reference workflow steps (written "
             "without the gold answer) that the session's successful work covered (judged)."),
    "s_hyp": ("0 to 1", "Hypothesis support: share of the submitted hypothesis' claims that the outputs of "
              "cells that ran successfully support (judged)."),
    "w_total": ("count", "Work: cells that ran and editor updates that took effect in the task phase, by "
                "everyone; a gated action counts once, for its proposer."),
    "w_human": ("count", "The part of W_total the simulated humans did. Not defined for the single agent."),
    "ca_plus": ("count", "Controlled autonomy: the AI's questions answered by a human's confirmation (Co-Gym)."),
    "ca_minus": ("count", "Controlled autonomy: human messages a judge finds halt the AI (Co-Gym)."),
    "pooling": ("0 to 1", "Information pooling (Stasser & Titus): share of the simulated humans' private briefing "
                "items that reached the shared record (chat, memory, cells, request and decision reasons, result "
                "editor), as a judge decides. Opt-in; not defined for the single agent."),
    "pooling_lex": ("0 to 1", "The same share by the judge-free lexical lower bound (distinctive-token overlap; "
                    "errs toward 'not conveyed')."),
    "pooling_hyp": ("0 to 1", "Share of the private items the submitted hypothesis uses (judged; an empty "
                    "editor uses none)."),
    "pooling_delay": ("rounds", "Mean task round in which the pooled items first appeared (an item first in the "
                      "memory built before the task counts 0; judged)."),
}
"""metric column -> (range, meaning); its label is `METRIC_LABELS`'."""


def glossary_table(metrics: list[str] | None = None) -> pd.DataFrame:
    """The glossary (of `metrics`, default every entry) as a table: label, column, range, meaning."""
    keys = [m for m in (metrics or list(GLOSSARY)) if m in GLOSSARY]
    return pd.DataFrame([{"name": METRIC_LABELS[m], "column": m, "range": GLOSSARY[m][0], "meaning": GLOSSARY[m][1]}
                         for m in keys])


def glossary_markdown() -> str:
    """The glossary as a Markdown table (what docs/glossary.md holds under its introduction)."""
    lines = ["| name | column | range | meaning |", "|---|---|---|---|"]
    lines += [f"| {METRIC_LABELS[m]} | `{m}` | {span} | {meaning} |" for m, (span, meaning) in GLOSSARY.items()]
    return "\n".join(lines) + "\n"
