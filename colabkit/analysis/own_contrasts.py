"""A study's own comparisons: the contrasts its experiment declares, else each own variant
against its Default twin, estimated like the paper's and decided only where the plan names them.

The paper's families (`colabkit.analysis.inference.planning.families`) compare the registered
variants by structure and composition (Scaffolded - Default of the same seats, ...). A
researcher's inline variant (`preassigned-drs`: humans D, R and a new S) is in none of them,
so without this module it would reach the study table and nothing else. Here:

- `comparisons`: the pairs a study is about. Those its experiment declares (`contrasts:` in the
  file, `Experiment.contrasts`), in its order; when it declares none, every own variant (a name
  the suite does not register) against its **Default twin**: the variant of the same seats
  (composition) without a structure (`default`, or `single` for a team of no humans) that ran,
  the registered `default-<seats>` first. A variant that is itself the twin of another is a
  reference, not compared. A pair that cannot be estimated keeps its row with the `reason`
  (no twin ran, two candidates, a variant with no scored session), so figures and tables name it;
  so does an own variant that declared contrasts leave out.
- `own_contrasts`: the rows of those pairs in the contrasts table's columns (`CONTRAST_COLUMNS`):
  the same estimation as every planned test (`decide.difference_test`: mean paired difference,
  task-clustered SE, t on tasks - 1 df; the sign-flip test beside it). A pair the analysis plan
  names (a hypothesis A - B on the metric) takes the plan's decision, adjusted p and interval at
  its level from the one procedure (`study_decisions`); any other is estimated and not decided
  (`decision` says so, `p_adjusted` is empty): adding a comparison after the data never changes
  what the plan decides. Write it into the plan (`colabkit plan-analysis --hypotheses FILE`)
  before the data to have it decided.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from colabkit.analysis.inference.decisions.contrasts import CONTRAST_COLUMNS, NOT_REQUESTED, paired_differences
from colabkit.analysis.inference.decisions.decide import difference_test, study_decisions
from colabkit.analysis.inference.estimation.signflip import sign_flip_p
from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, AnalysisPlan, with_plan
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import METRIC_LABELS, check_scores, variant_order

COMPARISON_COLUMNS = ("a", "b", "source", "reason")
DECLARED = "declared in the experiment"
TWIN = "its Default twin"
NOT_DECIDED = "not in the plan: estimated, not decided"
OWN_FAMILY = "own comparison"


def own_variants(variants: Iterable[str]) -> list[str]:
    """The variants of `variants` the suite does not register (a study's own), in the study's order."""
    return [v for v in variant_order(variants) if v not in ALL_VARIANTS]


def _seats(composition: str) -> str:
    return "no humans" if composition == "none" else f"seats {composition!r}"


def _twin(scores: pd.DataFrame, variant: str) -> tuple[str, str]:
    """(the Default twin of `variant`, "") or ("", why it has none)."""
    cells = scores.drop_duplicates("variant").set_index("variant")
    composition = str(cells.at[variant, "composition"])
    reference = "single" if composition == "none" else "default"
    candidates = [v for v in variant_order(cells.index) if v != variant
                  and cells.at[v, "structure"] == reference and cells.at[v, "composition"] == composition]
    registered = [v for v in candidates if v in ALL_VARIANTS]
    if registered or len(candidates) == 1:
        return (registered or candidates)[0], ""
    if candidates:
        return "", (f"{len(candidates)} {reference} variants with {_seats(composition)} ran "
                    f"({', '.join(candidates)}): declare which under contrasts:")
    return "", (f"no Default twin ran (a {reference} variant with {_seats(composition)}): declare a comparison "
                "under contrasts: in the experiment file")


def comparisons(scores: pd.DataFrame, declared: Sequence[tuple[str, str]] = ()) -> pd.DataFrame:
    """The pairs this study is about, one row each: a, b, source, reason (module docstring)."""
    present = set(scores["variant"])
    rows: list[dict[str, str]] = []
    if declared:
        for a, b in declared:
            absent = [v for v in (a, b) if v not in present]
            rows.append({"a": a, "b": b, "source": DECLARED,
                         "reason": f"no scored session of {', '.join(absent)}" if absent else ""})
        named = {v for pair in declared for v in pair}
        rows += [{"a": v, "b": "", "source": TWIN, "reason": "the experiment declares its contrasts and none names it"}
                 for v in own_variants(present) if v not in named]
        return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    pairs = {v: _twin(scores, v) for v in own_variants(present)}
    references = {twin for twin, _ in pairs.values() if twin}
    for v, (twin, reason) in pairs.items():  # a reference without a twin of its own, or the second of two twins
        if v not in references or not (reason or any(r["a"] == twin and r["b"] == v for r in rows)):
            rows.append({"a": v, "b": twin, "source": TWIN, "reason": reason})
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def _composition(scores: pd.DataFrame, a: str, b: str) -> str:
    of = scores.drop_duplicates("variant").set_index("variant")["composition"]
    return str(of[a]) if of[a] == of[b] else f"{of[a]} vs {of[b]}"


def own_contrasts(scores: pd.DataFrame, pairs: pd.DataFrame, metrics: Iterable[str] | None = None,
                  plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """A row per estimable pair of `pairs` (`comparisons`) and metric (default: the plan's that
    the scores have), in the contrasts table's columns (module docstring)."""
    plan = plan or AnalysisPlan()
    metrics = [m for m in (plan.metrics if metrics is None else metrics) if m in scores.columns]
    table = check_scores(scores, metrics)
    if not (pairs["reason"] == "").any():  # nothing to estimate: the plan's procedure is not run for it
        return with_plan(with_judge_columns(pd.DataFrame(columns=list(CONTRAST_COLUMNS)), table), plan)
    decided = study_decisions(check_scores(table, [m for m in plan.metrics if m in table.columns]), plan)
    decided = decided[decided["composition"] != "pooled"].set_index(["a", "b", "metric"])
    rows = []
    for pair in pairs[pairs["reason"] == ""].itertuples():
        for metric in metrics:
            d = paired_differences(table, pair.a, pair.b, metric)
            test = difference_test(d, plan)
            p_flip, how = sign_flip_p(d["d"], d["task_id"], plan.sign_flips, plan.sign_flip_seed, plan.exact_flips,
                                      plan.zero_tolerance)
            row = {"hypothesis": "", "family": OWN_FAMILY, "composition": _composition(table, pair.a, pair.b),
                   "metric": metric, "a": pair.a, "b": pair.b, "component": pair.source, "direction": "two-sided",
                   **{k: v for k, v in test.items() if k != "t"}, "ci": "95% unadjusted",
                   "p_test": math.nan, "p_adjusted": math.nan, "declared": False, "decision": NOT_DECIDED,
                   "local_alpha": math.nan, "sim_ci_low": math.nan, "sim_ci_high": math.nan,
                   "interval": "not in the plan: no decision level (ci_low/ci_high: 95% unadjusted)",
                   "p_signflip": p_flip, "signflip": how, **NOT_REQUESTED}
            if (pair.a, pair.b, metric) in decided.index:  # the plan names it: its decision, never a new one
                planned = decided.loc[(pair.a, pair.b, metric)]
                row |= {k: planned[k] for k in ("hypothesis", "family", "direction", "p_test", "p_adjusted",
                                                "declared", "decision", "local_alpha", "sim_ci_low", "sim_ci_high",
                                                "interval")}
            rows.append(row)
    out = pd.DataFrame(rows, columns=list(CONTRAST_COLUMNS))
    return with_plan(with_judge_columns(out, table), plan)


def _interval(row: pd.Series) -> tuple[float, float, bool]:
    """(low, high, decided): the interval at the plan's level for a decided row, else the 95%
    unadjusted one (`decided` False); NaN when there is none."""
    if not math.isnan(float(row["sim_ci_low"])):
        return float(row["sim_ci_low"]), float(row["sim_ci_high"]), True
    return float(row["ci_low"]), float(row["ci_high"]), False


def comparison_lines(pairs: pd.DataFrame, rows: pd.DataFrame, metrics: Iterable[str]) -> list[str]:
    """One caption line per pair of `pairs`: its estimate on each of `metrics` from `rows`
    (`own_contrasts`) with its interval and what decided it, or why it has none."""
    lines = []
    for pair in pairs.itertuples():
        if pair.reason:
            what = f"{pair.a}: no comparison" if pair.source == TWIN else f"{pair.a} − {pair.b}: not estimated"
            lines.append(f"{what}: {pair.reason}.")
            continue
        parts = []
        for metric in metrics:
            found = rows[(rows["a"] == pair.a) & (rows["b"] == pair.b) & (rows["metric"] == metric)]
            if found.empty:
                continue
            row, label = found.iloc[0], METRIC_LABELS.get(metric, metric)
            if math.isnan(float(row["diff"])):
                parts.append(f"{label} no pairs ({row['note'] or 'no session of both has a value'})")
                continue
            low, high, decided = _interval(row)
            interval = f"[{low:.3g}, {high:.3g}]" if not math.isnan(low) else "no interval"
            decision = str(row["decision"]) if decided or row["decision"] != NOT_DECIDED else "not decided"
            diff = float(row["diff"])
            parts.append(f"{label} {f'{diff:+.3g}' if diff else '0'} {interval} "
                         f"({int(row['n_tasks'])} tasks; {decision})")
        lines.append(f"{pair.a} − {pair.b} ({pair.source}): " + ("; ".join(parts) or "no metric of this figure") + ".")
    return lines
