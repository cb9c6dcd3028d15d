"""Who plays the humans: each outcome per simulator, and the study's contrasts under each.

A simulator sweep (`experiments/simulators.yaml`) runs every (variant, task, seed) once per
model playing D and R, with the AI's model fixed. The score table does not say who played
the humans; `with_simulators` adds a `simulator` column read from each session's stored
models (`load_sessions`: the same `simulator_label` the fingerprints use; several seats with
different models are joined "D=...; R=..."; a session without a simulated human has none).

- `by_simulator`: the rows of one simulator (the first in sorted order unless named), plus
  the sessions with no simulated human, so the study's tables can take one simulator at a
  time (a (variant, task, seed) is otherwise scored once per simulator and cannot pair).
- `simulator_effect`: per variant and metric, each other simulator minus the reference on the
  same (task, seed), tested at the task level like every contrast (`task_contrast`); Holm over
  the whole table finds where an outcome moves (a description outside the plan's decisions,
  `adjustment` says so on every row); where it does not, the standardised TOST
  (`verdict`: equivalent, not shown equivalent, or inconclusive at low power) says whether
  it is shown *not* to move: non-rejection is never read as "no difference".
- `contrasts_by_simulator`: the study's contrasts (`contrasts`, Scaffolded - Default per
  composition) under each simulator, each decided by the experiment's plan (its one
  procedure, run on that simulator's sessions): does the headline survive a change of
  simulated human?
- `simulator_failures`: the judged label `sim_failure` (`colabkit.evaluation.metrics.simfailure`)
  counted per variant (and simulator).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from colabkit.analysis.inference.decisions.contrasts import contrasts, paired_differences, task_contrast
from colabkit.analysis.inference.decisions.decide import equivalence_verdict
from colabkit.analysis.inference.decisions.termination import DESCRIPTION
from colabkit.analysis.inference.planning.families import holm
from colabkit.analysis.inference.planning.plan import AnalysisPlan
from colabkit.analysis.realism.fingerprints import HUMAN_SEATS, simulator_label
from colabkit.analysis.scores import STUDY_METRICS, check_scores, variant_order

COLUMN = "simulator"


def session_simulators(sessions: pd.DataFrame) -> pd.Series:
    """session_id -> who played its simulated humans (None without one)."""
    labels = {}
    for rec in sessions.itertuples(index=False):
        seats = [s for s in (rec.humans or "").split(",") if s in HUMAN_SEATS]
        mine = {s: simulator_label(rec.models_json, s) for s in seats}
        distinct = set(mine.values())
        labels[rec.session_id] = (None if not mine else distinct.pop() if len(distinct) == 1
                                  else "; ".join(f"{s}={m}" for s, m in mine.items()))
    return pd.Series(labels, name=COLUMN, dtype="object")


def with_simulators(scores: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    """The score table with its `simulator` column, from `sessions` (the stored records); a
    table that already has one (a saved table) keeps it where `sessions` says nothing."""
    labels = session_simulators(sessions) if len(sessions) else pd.Series(dtype="object", name=COLUMN)
    found = scores["session_id"].map(labels)
    if COLUMN in scores.columns:
        found = found.where(found.notna(), scores[COLUMN])
    return scores.assign(simulator=found)


def simulators(scores: pd.DataFrame) -> list[str]:
    """The simulators in the table, sorted ([] without the column)."""
    return sorted(scores[COLUMN].dropna().unique()) if COLUMN in scores.columns else []


def by_simulator(scores: pd.DataFrame, name: str | None = None) -> pd.DataFrame:
    """One simulator's sessions plus those without a simulated human; the table as it is when
    it holds one simulator or none."""
    present = simulators(scores)
    if len(present) < 2:
        return scores
    chosen = name or present[0]
    return scores[scores[COLUMN].isna() | (scores[COLUMN] == chosen)]


def _equivalence(runs: pd.DataFrame, other: str, reference: str, metric: str, margin_sd: float) -> dict[str, object]:
    d = paired_differences(runs, other, reference, metric)
    if d["task_id"].nunique() < 2:
        return {"margin_sd": margin_sd, "verdict": "inconclusive"}
    verdict = equivalence_verdict(d, margin_sd, 0.05)
    return {k: verdict[k] for k in ("margin_sd", "p_tost", "tost_power", "verdict")}


def simulator_effect(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS,
                     reference: str | None = None, margin_sd: float = 0.5) -> pd.DataFrame:
    """Per variant, metric and other simulator: the paired difference other - reference, and
    whether it is shown equivalent within `margin_sd` between-task SDs (module docstring)."""
    metrics = list(metrics)
    columns = ["variant", "metric", "simulator", "reference", "mean_simulator", "mean_reference", "n_pairs",
               "n_tasks", "diff", "se_task", "ci_low", "ci_high", "p_unadjusted", "p_holm", "adjustment", "margin_sd",
               "p_tost", "tost_power", "verdict", "note"]
    present = simulators(scores)
    if len(present) < 2:
        return pd.DataFrame(columns=columns)
    reference = reference or present[0]
    table = check_scores(scores[scores[COLUMN].notna()], metrics)
    rows = []
    for variant in variant_order(table["variant"]):
        runs = table[table["variant"] == variant].assign(variant=lambda t: t[COLUMN])
        means = runs.groupby("variant")[metrics].mean()
        for other in (s for s in present if s != reference and s in means.index):
            for metric in metrics:
                rows.append({"variant": variant, "metric": metric, "simulator": other, "reference": reference,
                             "mean_simulator": means.loc[other, metric],
                             "mean_reference": means[metric].get(reference),
                             **task_contrast(runs, other, reference, metric),
                             **_equivalence(runs, other, reference, metric, margin_sd)})
    out = pd.DataFrame(rows, columns=[c for c in columns if c not in ("p_holm", "adjustment")])
    out["p_holm"], _ = holm(out["p_unadjusted"].to_numpy(dtype="float64"))
    out["adjustment"] = DESCRIPTION
    return out[columns]


def contrasts_by_simulator(scores: pd.DataFrame, plan: AnalysisPlan | None = None, **options: object) -> pd.DataFrame:
    """The study's contrasts (`contrasts`, its defaults unless `options` say otherwise) under
    each simulator, decided by `plan` (the experiment's; default: the default plan, labelled),
    with a `simulator` column; empty without a sweep."""
    present = simulators(scores)
    if len(present) < 2:
        return pd.DataFrame()
    parts = [contrasts(by_simulator(scores, name), plan=plan, **options).assign(simulator=name)  # type: ignore[arg-type]
             for name in present]
    return pd.concat(parts, ignore_index=True)


def stored_sessions(folder: Path | str) -> pd.DataFrame:
    """The sessions table of a results folder (empty when it is not one), for `with_simulators`."""
    from colabkit.store import load_sessions

    path = Path(folder)
    return load_sessions(path) if path.is_dir() else pd.DataFrame(columns=["session_id", "humans", "models_json"])


def simulator_failures(scores: pd.DataFrame) -> pd.DataFrame:
    """The judged simulator-caused failures (`sim_failure`, an opt-in metric) counted per
    variant (and simulator, in a sweep): sessions, labelled ones, caused ones, their share and
    the kinds; a missing label (the judge could not answer) is counted apart, never as False."""
    keys = ["variant", *([COLUMN] if simulators(scores) else [])]
    columns = [*keys, "sessions", "labelled", "caused", "caused_share", "kinds"]
    if "sim_failure" not in scores.columns or scores["sim_failure"].isna().all():
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in scores.groupby(keys, sort=False, dropna=False):
        label = group["sim_failure"].dropna().astype(bool)
        kinds = group.loc[group["sim_failure"].fillna(False).astype(bool), "sim_failure_kind"].value_counts()
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                     "sessions": len(group), "labelled": len(label), "caused": int(label.sum()),
                     "caused_share": label.mean() if len(label) else float("nan"),
                     "kinds": ", ".join(f"{k} {n}" for k, n in kinds.items())})
    out = pd.DataFrame(rows, columns=columns)
    return out.set_index("variant").loc[variant_order(out["variant"])].reset_index()[columns]
