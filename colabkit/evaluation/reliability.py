"""How far a judge can be trusted: agreement across repeats and a sanity check on gold.

None of the anchor systems measures its judge. colabkit does two things with every job:

- **Repeats.** `--repeats K` asks every question K times with different samples and keeps
  every answer. Agreement is reported per judged question, i.e. per metric and item kind
  (the item id's prefix: HMS asks 'context' (true/false), 'relation' (A/B/C), 'variables'
  (an F1) and 'decompose' (a count)): Fleiss' kappa over the items whose labels all repeats
  gave (statsmodels' `fleiss_kappa`), and the spread (max - min across repeats, averaged over
  items) for numbers. Labels of different questions are never pooled: their categories
  differ, and pooling HMS's context and relation labels reported +0.15 where the two kappas
  were -0.33 and -0.02. Keys are 'kappa:<metric>/<kind>' and 'spread:<metric>/<kind>'
  ('kappa:<metric>' for items without a kind prefix).
- **Sanity check.** On a few tasks the judge scores gold against itself (must be ~1), gold
  against another task's gold (~0) and an empty hypothesis against gold (0), through the
  same judged pipeline as Performance. The result is stored in `<results>/judge-checks/`
  and a judge that fails it is marked unreliable in every score file and table.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from colabkit.evaluation.judge import Judge, grade_of, judge_id, prompt_version
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.store import atomic_write_text
from colabkit.tasks import TaskSuite

CHECKS_DIR = "judge-checks"
SANITY_VERSION = 1
SANITY_TASKS = 3
# A plumbing-grade judge (the embedded 135M model) is checked on one task: every score it gives
# is marked judge_grade='plumbing' whatever the check says, so more tasks cannot change what a
# table says of it, while one task still runs the whole check (all three cases, stored, read
# into every score file), which is what `make demo` is there to exercise.
PLUMBING_SANITY_TASKS = 1
SELF_MIN = 0.9
OTHER_MAX = 0.1


def fleiss_kappa(ratings: list[list[str]]) -> float | None:
    """Fleiss' kappa of items (rows) rated by the same number of raters (repeats).

    None when it is undefined: fewer than two items or raters, or a single category used
    throughout (agreement is then perfect but chance agreement is too; statsmodels would
    divide by zero).
    """
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    if len(ratings) < 2 or len(ratings[0]) < 2:
        return None
    categories = sorted({label for row in ratings for label in row})
    if len(categories) < 2:
        return None
    codes = np.array([[categories.index(label) for label in row] for row in ratings])
    table, _ = aggregate_raters(codes, n_cat=len(categories))
    value = float(_fleiss(table, method="fleiss"))
    return None if np.isnan(value) else value


def question(metric: str, item: str) -> str:
    """The judged question an item belongs to: '<metric>/<kind>' ('hms/context' for the item
    'context:p0:g1'), or the metric alone for an item id without a kind prefix."""
    return f"{metric}/{item.split(':', 1)[0]}" if ":" in item else metric


def judgement_agreement(judgements: list[Judgement]) -> dict[str, float | None]:
    """Per judged question (`question`): kappa of the labels and mean spread of the scores,
    over items answered in every repeat present ('kappa:<question>', 'spread:<question>')."""
    return _agreement((question(j.metric, j.item), j.item, j.repeat, j.label, j.score) for j in judgements)


def table_agreement(judgements: pd.DataFrame) -> dict[str, float | None]:
    """`judgement_agreement` over a judgements table (`load_judgements`): items are told apart
    per session and scorer, so a whole job's repeats are pooled per judged question."""
    return _agreement((question(row.metric, row.item), f"{row.session_id}/{row.scorer}/{row.item}", int(row.repeat),
                        None if pd.isna(row.label) else str(row.label),
                        None if pd.isna(row.score) else float(row.score))
                       for row in judgements.itertuples(index=False))


def _agreement(rows: Iterable[tuple[str, str, int, str | None, float | None]]) -> dict[str, float | None]:
    by_item: dict[tuple[str, str], dict[int, tuple[str | None, float | None]]] = defaultdict(dict)
    for metric, item, repeat, label, score in rows:
        by_item[(metric, item)][repeat] = (label, score)
    repeats = sorted({r for answers in by_item.values() for r in answers})
    if len(repeats) < 2:
        return {}
    labels: dict[str, list[list[str]]] = defaultdict(list)
    spreads: dict[str, list[float]] = defaultdict(list)
    for (metric, _), answers in by_item.items():
        if len(answers) != len(repeats):
            continue
        answered = [answers[r] for r in repeats]
        given_labels = [label for label, _ in answered if label is not None]
        given_scores = [score for _, score in answered if score is not None]
        if len(given_labels) == len(repeats):
            labels[metric].append(given_labels)
        elif len(given_scores) == len(repeats):
            spreads[metric].append(max(given_scores) - min(given_scores))
    out: dict[str, float | None] = {f"kappa:{m}": fleiss_kappa(rows) for m, rows in labels.items()}
    out |= {f"spread:{m}": statistics.fmean(v) for m, v in spreads.items()}
    return out


def repeat_agreement(results: list[ScoreResult]) -> dict[str, float | None]:
    """Agreement of one session's repeats: judged items, plus each numeric value's spread."""
    out = judgement_agreement([j for r in results for j in r.judgements])
    names = {k for r in results for k, v in r.values.items()
             if isinstance(v, int | float) and not isinstance(v, bool)}
    for name in sorted(names):
        present = [float(v) for r in results if isinstance(v := r.values.get(name), int | float)]
        out[f"spread:{name}"] = max(present) - min(present) if len(present) == len(results) else None
    return out


class SanityCase(BaseModel):
    kind: str
    """'self' (gold vs itself), 'other' (another task's gold vs this gold), 'empty'."""
    task_id: str
    other_task_id: str | None = None
    recall_context: float | None
    hms: float | None
    passed: bool
    flags: list[str] = []
    judgements: list[Judgement] = []
    """Every verdict behind the case, raw answers included, so a failure can be inspected."""


class SanityCheck(BaseModel):
    """The judge's result on known answers; `passed` decides `judge_reliable` everywhere."""

    version: int = SANITY_VERSION
    judge: dict[str, Any]
    cases: list[SanityCase]
    passed: bool | None
    """None when it could not run (no task with gold)."""
    reason: str
    checked_at: datetime


def _case_passed(kind: str, recall: float | None, hms: float | None) -> bool:
    if recall is None or hms is None:
        return False
    if kind == "self":
        return recall >= SELF_MIN and hms >= SELF_MIN
    if kind == "other":
        return recall <= OTHER_MAX and hms <= OTHER_MAX
    return recall == 0 and hms == 0


def sanity_check_path(results: Path, judge: ModelConfig) -> Path:
    """Where the check of `judge` is stored: per judge config, check version and HMS prompt
    versions (a changed prompt is checked anew)."""
    from colabkit.evaluation.metrics.hypothesis import HMS_PROMPTS

    prompts = sha256_hex(prompt_version(HMS_PROMPTS))[:8]
    return results / CHECKS_DIR / f"{judge_id(judge)}-v{SANITY_VERSION}-{prompts}.json"


def load_sanity_check(results: Path, judge: ModelConfig) -> SanityCheck | None:
    """The stored check of `judge` in `results`, or None when it never ran."""
    path = sanity_check_path(results, judge)
    return SanityCheck.model_validate_json(path.read_bytes()) if path.is_file() else None


def judge_standing(results: Path, judge: ModelConfig) -> tuple[str, bool | None, str]:
    """(grade, reliable, reason) of `judge` in `results`: its grade, and whether its stored
    sanity check passed (None when it never ran or could not run), with the check's reason."""
    check = load_sanity_check(results, judge)
    reason = check.reason if check is not None else "the sanity check has not run"
    return grade_of(judge), (check.passed if check is not None else None), reason


async def run_sanity_check(judge: Judge, suite: TaskSuite, task_ids: list[str], results: Path, *,
                           n_tasks: int = SANITY_TASKS) -> SanityCheck:
    """Run (or reuse from `results/judge-checks/`) the sanity check for `judge`.

    Tasks are the first `n_tasks` of `task_ids` that have gold (topped up from the suite),
    at most `PLUMBING_SANITY_TASKS` for a plumbing-grade judge;
    each is paired with the next task whose gold differs for the 'other' case. A stored check
    is reused if it covered at least `n_tasks` tasks and no case failed on a judge error.
    """
    from colabkit.evaluation.metrics.hypothesis import judge_hypotheses  # the Performance pipeline

    if judge.grade == "plumbing":
        n_tasks = min(n_tasks, PLUMBING_SANITY_TASKS)
    path = sanity_check_path(results, judge.config)
    if path.is_file():
        stored = SanityCheck.model_validate_json(path.read_bytes())
        enough = len({c.task_id for c in stored.cases}) >= n_tasks or stored.passed is None
        if enough and all("judge_error" not in f for c in stored.cases for f in c.flags):
            return stored
    with_gold = [t for t in dict.fromkeys([*task_ids, *suite.ids]) if t in suite.ids and suite.gold_for(t)]
    chosen = with_gold[:max(1, n_tasks)]
    ask = partial(judge.verdict, repeat=0)
    cases: list[SanityCase] = []
    for task_id in chosen:
        task, gold = suite.get(task_id), suite.gold_for(task_id)
        assert gold is not None
        others = [t for t in with_gold if t != task_id and
                  (g := suite.gold_for(t)) is not None and g.hypothesis != gold.hypothesis]
        runs: list[tuple[str, str | None, str]] = [("self", None, gold.hypothesis), ("empty", None, "")]
        if others:
            other_gold = suite.gold_for(others[0])
            assert other_gold is not None
            runs.insert(1, ("other", others[0], other_gold.hypothesis))
        for kind, other_id, prediction in runs:
            judged = await judge_hypotheses(ask, task, gold.hypothesis, prediction)
            s = judged.score
            cases.append(SanityCase(kind=kind, task_id=task_id, other_task_id=other_id,
                                    recall_context=s.recall_context, hms=s.hms,
                                    passed=_case_passed(kind, s.recall_context, s.hms), flags=judged.flags,
                                    judgements=judged.judgements))
    if not cases:
        check = SanityCheck(judge=judge.describe(), cases=[], passed=None,
                            reason="no task with gold: the judge could not be checked", checked_at=datetime.now(UTC))
    else:
        failed = [f"{c.kind} on {c.task_id}" for c in cases if not c.passed]
        reason = "all cases passed" if not failed else f"failed: {', '.join(failed)}"
        check = SanityCheck(judge=judge.describe(), cases=cases, passed=not failed, reason=reason,
                            checked_at=datetime.now(UTC))
    path.parent.mkdir(exist_ok=True)
    atomic_write_text(path, check.model_dump_json(indent=1))
    return check


AGREEMENT_COLUMNS = ("question", "sessions", "items", "tasks", "kappa", "kappa_ci_low", "kappa_ci_high",
                     "raw_agreement", "category_shares")


def pooled_agreement(judgements: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per judged question, the judge's agreement with itself across repeats, pooled over sessions.

    A session holds a handful of items per question, so a kappa per session is noisy and
    undefined where a session used one label; pooled over every item (items told apart per
    session and scorer) it is one estimate per question, with a 95% percentile interval from
    a bootstrap that resamples *tasks* (clusters: the items of one task share its gold and
    context, so neither they nor its sessions are independent; a session bootstrap gave an SE
    a third of the truth). Without a `task_id` column, sessions are the clusters. It measures
    the judge's self-consistency, not whether it is right. Beside it:
    the raw agreement (share of items whose repeats all gave the same label) and each label's
    share of all answers, since kappa alone hides a judge that answers one label almost always.
    Items not answered in every repeat, and numeric answers, are left out (their spread is in
    `table_agreement`).
    """
    labelled = judgements.dropna(subset=["label"]) if len(judgements) else judgements
    repeats = sorted(set(judgements["repeat"])) if len(judgements) else []
    rows = []
    if len(repeats) >= 2 and len(labelled):
        frame = labelled.assign(question=[question(m, i) for m, i in zip(labelled["metric"], labelled["item"])],
                                label=labelled["label"].astype(str))
        cluster = frame["task_id"] if "task_id" in frame.columns and frame["task_id"].notna().all() \
            else frame["session_id"]
        wide = frame.assign(cluster=cluster.astype(str)).pivot_table(
            index=["question", "cluster", "session_id", "scorer", "item"], columns="repeat", values="label",
            aggfunc="first").dropna()
        rng = np.random.default_rng(seed)
        for name, block in wide.groupby(level="question"):
            ratings = block.to_numpy(dtype=str)
            clusters = block.index.get_level_values("cluster").to_numpy()
            ids = np.unique(clusters)
            by_cluster = {cid: ratings[clusters == cid] for cid in ids}
            boot = []
            for _ in range(n_boot if len(ids) >= 2 else 0):
                drawn = np.concatenate([by_cluster[cid] for cid in rng.choice(ids, size=len(ids))])
                value = fleiss_kappa(drawn.tolist())
                if value is not None:
                    boot.append(value)
            labels, counts = np.unique(ratings, return_counts=True)
            rows.append({
                "question": name, "sessions": block.index.get_level_values("session_id").nunique(),
                "items": len(ratings), "tasks": len(ids),
                "kappa": fleiss_kappa(ratings.tolist()),
                "kappa_ci_low": float(np.percentile(boot, 2.5)) if len(boot) >= 20 else None,
                "kappa_ci_high": float(np.percentile(boot, 97.5)) if len(boot) >= 20 else None,
                "raw_agreement": float(np.mean([len(set(r)) == 1 for r in ratings])),
                "category_shares": "; ".join(f"{lab}: {c / counts.sum():.2f}" for lab, c in zip(labels, counts)),
            })
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
