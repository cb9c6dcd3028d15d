"""The replication report: the seed paper's claims, each decided by the plan, one row per claim.

`replication_table`: every number the paper published (`colabkit.analysis.reference`, with its
source) beside this run's mean of the same variant and metric and its 95% interval
(task-clustered SE, t on tasks - 1 df, the study table's), and n tasks.

`claims_table` (and `claim_verdicts`, from a hypothesis table already computed): one row per
claim of the plan: the published number, this run's estimate, the planned test, the
procedure's decision, the verdict and the missing sessions. A verdict comes from decisions
only, never from the sign of an estimate:

- **replicated**: the claim is declared, and the published numbers lie on its side;
- **contradicted**: a planned test declares the opposite (this claim's own test, where the
  published numbers lie on the other side of it, or another planned test of the same
  comparison: an opposite-direction hypothesis, or a two-sided test declared with its
  estimate opposite); the default plan plans no opposite tests, so it never contradicts;
- **not decided**, with the reason: not reached (no level passed to it), underpowered at the
  level it got (the power of its test at that level against the published effect, with this
  run's SE, below the plan's target), not declared at adequate power, inconclusive
  (equivalence), or no data. An estimate on the other side is said, never read as a verdict.

**Missing sessions** (`missing`): per claim, how many sessions of its variants are missing
and why (`estimation.missing.missing_sessions`); `worst_case`: for a declared claim, whether
it stays declared when every missing score of its variants is filled in against it within
its task (the task's lowest value for a variant the claim wants high, the highest for one it
wants low), the whole procedure run again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.decisions.decide import ABSENT, study_decisions
from colabkit.analysis.inference.estimation.missing import MISSING_REASONS, missing_sessions, worst_case_within_task
from colabkit.analysis.inference.estimation.stats import study_table
from colabkit.analysis.inference.planning.hypotheses import Contrast, Hypothesis, hypothesis_contrasts
from colabkit.analysis.inference.planning.plan import AnalysisPlan, with_plan
from colabkit.analysis.reference import seed_paper
from colabkit.analysis.scores import check_scores

REPLICATION_COLUMNS = ("variant", "metric", "published", "published_se", "estimate", "ci_low", "ci_high", "n_tasks",
                       "note")
CLAIM_COLUMNS = ("hypothesis", "claim", "published", "estimate", "planned_test", "decision", "verdict", "missing",
                 "worst_case", "paper_effect", "p_adjusted", "local_alpha", "power_at_level", "sim_ci_low",
                 "sim_ci_high", "comparisons")
SHOWN_CLAIM_COLUMNS = ("hypothesis", "claim", "published", "estimate", "planned_test", "decision", "verdict",
                       "missing", "worst_case")
"""The columns the notebook's first table shows (the CSV keeps them all)."""


def published_values() -> pd.DataFrame:
    """The paper's table, long: variant, metric, published (missing numbers left out)."""
    rows = [{"variant": v, "metric": m, "published": value}
            for v, metrics in seed_paper()["table"].items() for m, value in metrics.items() if value is not None]
    return pd.DataFrame(rows)


def replication_table(scores: pd.DataFrame, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Each published number beside this run's estimate and 95% interval (module docstring)."""
    published = published_values()
    metrics = [m for m in dict.fromkeys(published["metric"]) if m in scores.columns]
    here = study_table(check_scores(scores, metrics), metrics, plan=plan)[["variant", "metric", "mean", "se_task",
                                                                            "n_tasks"]]
    table = published.merge(here, on=["variant", "metric"], how="left")
    with np.errstate(invalid="ignore"):
        half = scipy_stats.t.ppf(0.975, table["n_tasks"].astype(float) - 1) * table["se_task"]
    ses = seed_paper().get("standard_errors", {})
    return pd.DataFrame({
        "variant": table["variant"], "metric": table["metric"], "published": table["published"],
        "published_se": [ses.get(v, {}).get(m, math.nan) for v, m in zip(table["variant"], table["metric"])],
        "estimate": table["mean"], "ci_low": table["mean"] - half, "ci_high": table["mean"] + half,
        "n_tasks": table["n_tasks"],
        "note": np.where(table["mean"].isna(), "no sessions of this variant scored on this metric", "")},
        columns=list(REPLICATION_COLUMNS))


def _published_pair(a: str, b: str, metric: str) -> tuple[float, float, str]:
    """(low, high, how) of the paper's A - B: from its table, or its stated range (memory's
    effect on initiative entropy, "+0.27 to +0.40", the table has no Memory row for it)."""
    table = seed_paper()["table"]
    if metric == "h_init_norm" and a.startswith("memory-") and b == a.replace("memory-", "default-"):
        low, high = seed_paper()["statements"]["memory_h_init_gain"]
        return float(low), float(high), f"+{low:.2f} to +{high:.2f} (stated)"
    x, y = table.get(a, {}).get(metric), table.get(b, {}).get(metric)
    if x is None or y is None:
        return math.nan, math.nan, "not published"
    return float(x) - float(y), float(x) - float(y), f"{x:g} - {y:g}"


def published_effect(contrast: Contrast, metric: str) -> tuple[float, float, str]:
    """(low, high, text) of the paper's value of one contrast (NaN when not published)."""
    low = high = 0.0
    texts = []
    for a, b, coef in contrast:
        lo, hi, how = _published_pair(a, b, metric)
        low, high = low + min(coef * lo, coef * hi), high + max(coef * lo, coef * hi)
        texts.append(how)
    if math.isnan(low):
        return math.nan, math.nan, "not published"
    value = f"{low:+.2f}" if abs(high - low) < 1e-9 else f"{low:+.2f} to {high:+.2f}"
    if all("stated" in text for text in texts):
        return low, high, f"{value} (stated" + (", per composition)" if len(texts) > 1 else ")")
    return low, high, f"{value} ({', '.join(texts)})"


def _unfavourable(h: Hypothesis, low: float, high: float) -> float:
    """The end of a published range least favourable to the claim."""
    return low if h.direction in ("greater", "two-sided") else high


def _agrees(h: Hypothesis, effect: float) -> bool | None:
    """Do the published numbers lie on the claim's side? None when not published."""
    if math.isnan(effect):
        return None
    return {"greater": effect > 0, "less": effect < 0, "not-greater": effect < h.margin,
            "two-sided": effect != 0, "equivalent": True}[h.direction]


def planned_test(h: Hypothesis, plan: AnalysisPlan) -> str:
    """The planned test of a claim, in words."""
    side = {"greater": "> 0", "less": "< 0", "not-greater": f"< {h.margin:g} (non-superiority)",
            "two-sided": "!= 0", "equivalent": f"within +/-{h.margin_sd:g} SD (TOST)"}[h.direction]
    found = hypothesis_contrasts(h, plan.variants)
    if not found:
        return "not planned"
    text = " and ".join(" ".join(("+ " if c > 0 else "- ") + ("" if abs(c) == 1 else f"{abs(c):.3g} x ") +
                                 f"({a} - {b})" for a, b, c in contrast).removeprefix("+ ") for contrast in found)
    how = "each" if len(found) > 1 else "pooled" if len(found[0]) > 1 and not h.relative_to else "paired"
    return f"{text} {side} on {h.metric}, {how}" + (" (intersection: all must hold)" if len(found) > 1 else "")


def _power(h: Hypothesis, effect: float, se: float, df: float, level: float) -> float:
    """The power of one comparison's test at `level` against `effect`, with this run's SE."""
    if math.isnan(effect) or not se > 0 or not level > 0 or not df >= 1:
        return math.nan
    ncp = {"greater": effect, "less": -effect, "not-greater": h.margin - effect,
           "two-sided": abs(effect)}.get(h.direction, math.nan) / se
    return float(scipy_stats.nct.sf(scipy_stats.t.ppf(1 - level / 2, df), df, ncp))


def _opposes(h: Hypothesis, row: pd.Series, other_direction: str) -> bool:
    """Whether a declared test of the same comparison, in `other_direction`, says the opposite."""
    estimate = float(row["diff"])
    said = {"greater": 1.0, "less": -1.0, "two-sided": float(np.sign(estimate))}.get(other_direction, 0.0)
    if h.direction == "equivalent":
        return said != 0.0
    wanted = {"greater": 1.0, "less": -1.0, "not-greater": -1.0, "two-sided": 0.0}[h.direction]
    return said != 0.0 and wanted != 0.0 and said == -wanted


def _opposite_declared(h: Hypothesis, found: list[Contrast], decisions: pd.DataFrame) -> str:
    """The name of a planned test that declares the opposite of `h` on one of its comparisons."""
    mine = {(c, h.metric) for c in found}
    for _, row in decisions[decisions["declared"].astype(bool)].iterrows():
        if row["hypothesis"] == h.name:
            continue
        parts = row.get("parts")
        theirs = {(p[0], row["metric"]) for p in parts} if isinstance(parts, tuple) else \
            {(((row["a"], row["b"], 1.0),), row["metric"])}
        if len(theirs) == 1 and theirs <= mine and _opposes(h, row, str(row["direction"])):
            return str(row["hypothesis"] or f"the exploratory test {row['a']} - {row['b']} on {row['metric']}")
    return ""


def _verdict(h: Hypothesis, row: pd.Series, agrees: bool | None, power: float, target: float,
             opposite: str) -> str:
    if row.get("note") == ABSENT or (pd.isna(row["diff"]) and not bool(row["declared"])):
        return "not decided: no data for its variants (counts as p = 1)"
    declared = bool(row["declared"])
    if declared and agrees is False:
        return "contradicted: its planned test declares the opposite of the published numbers"
    if opposite:
        return f"contradicted: {opposite} declares the opposite"
    if declared:
        return "replicated" if agrees else "declared (the paper publishes no number for it)"
    level = float(row["local_alpha"])
    if not level > 0:
        return "not decided: not reached (no level passed to it)"
    if h.direction == "equivalent":
        return f"not decided: {row['decision']}"
    if math.isnan(power):
        reason = f"not declared at the level it got, {level:.3g} (no published effect to compute its power)"
    elif power < target:
        reason = f"underpowered at the level it got (power {power:.0%} at {level:.3g} against the published effect)"
    else:
        reason = f"not declared (power {power:.0%} at the level it got, {level:.3g})"
    estimate, wanted = float(row["diff"]), {"greater": 1, "less": -1, "not-greater": -1}.get(h.direction, 0)
    side = "; the estimate lies on the other side, not declared" if wanted and estimate * wanted < 0 else ""
    return f"not decided: {reason}{side}"


def claim_verdicts(hypotheses: pd.DataFrame, plan: AnalysisPlan, decisions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per claim of `plan` from its decisions (`hypotheses`: the hypothesis table, or
    every planned test's `decisions` to look for an opposite declaration among them too)."""
    every = hypotheses if decisions is None else decisions
    rows = []
    for h in plan.hypotheses:
        found_rows = hypotheses[hypotheses["hypothesis"] == h.name]
        if found_rows.empty:
            continue
        row = found_rows.iloc[0]
        found = hypothesis_contrasts(h, plan.variants)
        published = [published_effect(c, h.metric) for c in found]
        effects = [_unfavourable(h, lo, hi) for lo, hi, _ in published]
        agreement = [_agrees(h, e) for e in effects]
        agrees = None if any(a is None for a in agreement) else all(agreement)
        parts = row.get("parts") if isinstance(row.get("parts"), tuple) else ()
        level = float(row["local_alpha"]) if row["local_alpha"] == row["local_alpha"] else 0.0
        powers = [_power(h, e, se, df, level) for e, (_, _, se, df) in zip(effects, parts)]
        power = min(powers) if powers and not any(math.isnan(p) for p in powers) else math.nan
        texts = [text for _, _, text in published]
        rows.append({
            "hypothesis": h.name, "claim": h.claim,
            "published": texts[0] if len(texts) == 1 else "; ".join(texts),
            "estimate": str(row["comparisons"]) if isinstance(row.get("comparisons"), str) else "no data",
            "planned_test": planned_test(h, plan), "decision": row["decision"],
            "verdict": _verdict(h, row, agrees, power, plan.power_target, _opposite_declared(h, found, every)),
            "paper_effect": float(np.mean(effects)) if effects else math.nan, "p_adjusted": row["p_adjusted"],
            "local_alpha": row["local_alpha"], "power_at_level": power if h.direction != "equivalent"
            else row["tost_power"], "sim_ci_low": row["sim_ci_low"], "sim_ci_high": row["sim_ci_high"],
            "comparisons": row.get("comparisons")})
    return pd.DataFrame(rows, columns=[c for c in CLAIM_COLUMNS if c not in ("missing", "worst_case")])


def _variants_of(found: Sequence[Contrast]) -> list[str]:
    return list(dict.fromkeys(v for c in found for a, b, _ in c for v in (a, b)))


def _missing_text(counts: pd.DataFrame) -> str:
    missing = int(counts["missing"].sum())
    why = ", ".join(f"{reason} {int(counts[reason].sum())}" for reason in MISSING_REASONS if counts[reason].sum())
    return f"{missing} of {int(counts['planned'].sum())}" + (f" ({why})" if why else "")


def _against(h: Hypothesis, found: Sequence[Contrast]) -> dict[str, float]:
    """Per variant, +1 where the claim wants it high, -1 low (`worst_case_within_task`)."""
    sign = {"greater": 1.0, "less": -1.0, "not-greater": -1.0}.get(h.direction, 0.0)
    wants: dict[str, float] = {}
    for contrast in found:
        for a, b, coef in contrast:
            wants[a] = wants.get(a, 0.0) + sign * coef
            wants[b] = wants.get(b, 0.0) - sign * coef
    return {v: float(np.sign(w)) for v, w in wants.items() if w != 0}


def _worst_case(h: Hypothesis, found: Sequence[Contrast], table: pd.DataFrame, plan: AnalysisPlan,
                declared: bool, missing: int) -> str:
    if not declared:
        return ""
    if not missing:
        return "nothing missing"
    against = _against(h, found)
    if not against:
        return "no direction to impute against"
    filled = worst_case_within_task(table, h.metric, against)
    again = study_decisions(filled, plan)
    stays = bool(again.loc[again["hypothesis"] == h.name, "declared"].iloc[0])
    return "stays declared" if stays else "not declared under worst-case imputation within task"


def claims_table(scores: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """One row per claim: published number, estimate, planned test, decision, verdict, missing
    sessions and the worst-case check (module docstring); named by the plan."""
    table = check_scores(scores, [m for m in plan.metrics if m in scores.columns])
    decisions = study_decisions(table, plan)
    hypotheses = decisions[decisions["hypothesis"] != ""].reset_index(drop=True)
    verdicts = claim_verdicts(hypotheses, plan, decisions).set_index("hypothesis")
    missing_text, worst = [], []
    for h in plan.hypotheses:
        if h.name not in verdicts.index:
            continue
        found = hypothesis_contrasts(h, plan.variants)
        present = [v for v in _variants_of(found) if v in set(table["variant"])]
        counts = missing_sessions(table, h.metric, present) if h.metric in table.columns and present else None
        missing_text.append(_missing_text(counts) if counts is not None else "no sessions")
        declared = bool(hypotheses.loc[hypotheses["hypothesis"] == h.name, "declared"].iloc[0])
        n_missing = int(counts["missing"].sum()) if counts is not None else 0
        worst.append(_worst_case(h, found, table, plan, declared, n_missing))
    out = verdicts.reset_index().assign(missing=missing_text, worst_case=worst)
    return with_plan(out.reindex(columns=list(CLAIM_COLUMNS)), plan)
