"""The counterfactual table's arithmetic on hand-made continuations (pairs by seed, intervals,
missing values, the original's value)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from colabkit.analysis.counterfactual import counterfactual_figure, counterfactual_table, paired_interval


def rows(change: str, values: dict[int, float | None], at: int = 9) -> list[dict]:
    return [{"session_id": f"{change}-{at}-{seed}", "parent_id": "p", "at": at, "change": change,
             "is_control": change == "none", "seed": seed, "w_total": value} for seed, value in values.items()]


def test_changes_are_paired_with_controls_seed_by_seed():
    forks = pd.DataFrame(rows("none", {0: 2.0, 1: 4.0, 2: 6.0}) + rows("replace_message", {0: 3.0, 1: 6.0, 2: 7.0}))
    [row] = counterfactual_table(forks, {"p": {"w_total": 5}}, metrics=["w_total", "absent"]).itertuples()
    assert (row.change, row.metric, row.k, row.k_control, row.n_pairs) == ("replace_message", "w_total", 3, 3, 3)
    assert row.change_mean == pytest.approx(16 / 3) and row.control_mean == 4.0 and row.original == 5.0
    assert row.diff == pytest.approx(4 / 3)  # differences 1, 2, 1
    half = 4.302653 * math.sqrt(1 / 3) / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert (row.ci_low, row.ci_high) == (pytest.approx(4 / 3 - half, abs=1e-4), pytest.approx(4 / 3 + half, abs=1e-4))


def test_a_missing_value_drops_its_pair_and_too_few_pairs_have_no_interval():
    forks = pd.DataFrame(rows("none", {0: 1.0, 1: None}) + rows("drop_message", {0: 2.0, 1: 5.0})
                         + rows("none", {0: 1.0}, at=12))
    table = counterfactual_table(forks, metrics=["w_total"])
    [row] = table.itertuples()  # the fork point with controls only has no change to report
    assert (row.k, row.k_control, row.n_pairs, row.diff) == (2, 1, 1, 1.0)
    assert math.isnan(row.ci_low) and math.isnan(row.ci_high) and math.isnan(row.original)
    assert paired_interval([])[0] != paired_interval([])[0]  # NaN mean without pairs
    figure = counterfactual_figure(forks[forks["at"] == 9], table)
    assert [ax.get_title().splitlines()[0] for ax in figure.axes] == ["w_total"]
