"""Fidelity cards: one page per simulated persona held against people in the same seat.

A card compares two samples of fingerprints (`fingerprints.fingerprints`) that differ only in
who played the seat: people ("person") and one simulator model, the same persona, the same
variants and the same tasks (the simulated rows are cut to the tasks the people did, so a
task's difficulty cannot pose as a simulator's style). A D-vs-R card holds the two simulated
personas against each other the same way: do the simulated analyst and researcher behave
differently at all?

The card is a table (per feature: the two means, Hedges' g and its 95% interval), the
classifier two-sample test, the Chamfer coverage and a figure (the g's with their intervals);
its `verdict` is "intervals only" when the samples are too few (`compare.MIN_ROWS`,
`compare.MIN_TASKS`), else whether the classifier tells the samples apart at `alpha`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from colabkit.analysis.realism.compare import (
    ClassifierTest,
    chamfer_coverage,
    classifier_test,
    standardised_differences,
)
from colabkit.analysis.realism.fingerprints import FEATURES, PERSON

INTERVALS_ONLY = "intervals only"


@dataclass(frozen=True)
class FidelityCard:
    """Sample `b` held against reference sample `a` (see the module docstring)."""

    title: str
    a_label: str
    b_label: str
    table: pd.DataFrame
    classifier: ClassifierTest
    chamfer: dict[str, float]
    alpha: float = 0.05

    @property
    def verdict(self) -> str:
        test = self.classifier
        if not test.conclusive:
            return INTERVALS_ONLY
        return "distinguishable" if test.p_value < self.alpha else "not distinguished"

    def summary(self) -> dict[str, object]:
        test = self.classifier
        return {"card": self.title, "a": self.a_label, "b": self.b_label, "n_a": test.n_a, "n_b": test.n_b,
                "tasks": test.n_tasks, "auc": test.auc, "p_value": test.p_value,
                "chamfer": self.chamfer["chamfer"], "a_to_b_ratio": self.chamfer["a_to_b_ratio"],
                "b_to_a_ratio": self.chamfer["b_to_a_ratio"], "verdict": self.verdict, "note": test.note}

    def figure(self) -> Figure:
        """The standardised differences with their intervals, one line per feature."""
        table = self.table.iloc[::-1]
        fig = Figure(figsize=(6.4, 0.28 * len(table) + 1.6), layout="constrained")
        ax = fig.subplots()
        ypos = np.arange(len(table))
        ax.axvline(0, color="grey", lw=0.8)
        ax.errorbar(table["g"], ypos, xerr=[table["g"] - table["ci_low"], table["ci_high"] - table["g"]],
                    fmt="o", color="#1f6fb4", ecolor="#9cc3e6", capsize=2)
        for y, g in enumerate(table["g"]):
            if math.isnan(g):
                ax.annotate("no interval", (0, y), fontsize=7, color="grey", xytext=(4, -3), textcoords="offset points")
        ax.set_yticks(ypos, table["feature"])
        ax.set_xlabel(f"standardised difference ({self.b_label} - {self.a_label}), 95% interval")
        test = self.classifier
        auc = "n/a" if math.isnan(test.auc) else f"{test.auc:.2f} (p={test.p_value:.3f})"
        ax.set_title(f"{self.title}: AUC {auc}, Chamfer {self.chamfer['chamfer']:.2f}; {self.verdict}", fontsize=9)
        if test.note:
            fig.text(0.0, 0.0, test.note, ha="left", va="top", fontsize=7, wrap=True)
        return fig


def make_card(title: str, a: pd.DataFrame, b: pd.DataFrame, a_label: str, b_label: str,
              features: Sequence[str] = FEATURES, *, permutations: int = 200, seed: int = 0,
              alpha: float = 0.05) -> FidelityCard:
    return FidelityCard(title, a_label, b_label, standardised_differences(a, b, features),
                        classifier_test(a, b, features, permutations=permutations, seed=seed),
                        chamfer_coverage(a, b, features), alpha)


def person_cards(prints: pd.DataFrame, features: Sequence[str] = FEATURES, **options: object) -> list[FidelityCard]:
    """One card per (persona, simulator) with people in that seat: people vs that simulator on
    the variants and tasks the people did."""
    cards = []
    people = prints[prints["kind"] == PERSON]
    for persona, mine in people.groupby("participant", sort=True):
        sims = prints[(prints["kind"] != PERSON) & (prints["participant"] == persona)
                      & prints["task_id"].isin(mine["task_id"]) & prints["variant"].isin(mine["variant"])]
        for simulator, theirs in sims.groupby("simulator", sort=True):
            cards.append(make_card(f"{persona}: people vs {simulator}", mine, theirs, "people", str(simulator),
                                   features, **options))  # type: ignore[arg-type]
    return cards


def persona_cards(prints: pd.DataFrame, features: Sequence[str] = FEATURES, **options: object) -> list[FidelityCard]:
    """Per simulator, simulated D against simulated R on the same variants and tasks."""
    cards = []
    sims = prints[prints["kind"] != PERSON]
    for simulator, rows in sims.groupby("simulator", sort=True):
        d, r = rows[rows["participant"] == "D"], rows[rows["participant"] == "R"]
        shared = set(d["task_id"]) & set(r["task_id"])
        d, r = d[d["task_id"].isin(shared)], r[r["task_id"].isin(shared)]
        if len(d) and len(r):
            cards.append(make_card(f"{simulator}: D vs R", d, r, "D", "R", features, **options))  # type: ignore[arg-type]
    return cards


def card_summary(cards: Sequence[FidelityCard]) -> pd.DataFrame:
    """One row per card: sizes, AUC and p, Chamfer and its ratios, verdict and note."""
    return pd.DataFrame([c.summary() for c in cards])


def outside_cards(prints: pd.DataFrame, outside: pd.DataFrame, features: Sequence[str] = FEATURES,
                  **options: object) -> list[FidelityCard]:
    """People from elsewhere (`outside`, e.g. Co-Gym's real condition via `cogym_tables`) against
    each simulator in the same seat, over all its tasks and variants: a looser comparison (other
    tasks, another platform), titled so."""
    cards = []
    for persona, theirs in outside.groupby("participant", sort=True):
        sims = prints[(prints["kind"] != PERSON) & (prints["participant"] == persona)]
        for simulator, mine in sims.groupby("simulator", sort=True):
            cards.append(make_card(f"{persona}: outside people vs {simulator} (other tasks)", theirs, mine,
                                   "outside people", str(simulator), features, **options))  # type: ignore[arg-type]
    return cards


def card_outputs(cards: Sequence[FidelityCard]) -> tuple[dict[str, pd.DataFrame], dict[str, Figure]]:
    """Each card's table and figure under a file-safe name (`card-<title>`), plus the summary."""
    names = [f"card-{re.sub(r'[^A-Za-z0-9]+', '-', c.title).strip('-').lower()}" for c in cards]
    tables = {"cards": card_summary(cards), **{n: c.table for n, c in zip(names, cards, strict=True)}}
    return tables, {n: c.figure() for n, c in zip(names, cards, strict=True)}
