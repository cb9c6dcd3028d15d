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

A card reads on a scale (`scale`): the classifier is run again on the features calibrated
on real and simulated users (the package's `calibration.json`), and its AUC interval is placed
against the real users' noise floor and RecLLMSim's LLM users (`scale.place`); the table gets
each feature's floor and signal |g|; the card lists what the calibration does not cover.
`calibration=None` leaves the scale off.
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
from colabkit.analysis.realism.scale import CalibrationPoints, Placement, feature_scale, load_calibration, place

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
    scale: Placement | None = None
    points: CalibrationPoints | None = None

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
                "b_to_a_ratio": self.chamfer["b_to_a_ratio"], "verdict": self.verdict, "note": test.note,
                **self.scale_summary()}

    def scale_summary(self) -> dict[str, object]:
        """The card's place on the calibration scale (empty values without one)."""
        scale = self.scale
        if scale is None:
            return dict.fromkeys(("scale_auc", "scale_auc_low", "scale_auc_high", "scale"), np.nan)
        return {"scale_auc": scale.auc, "scale_auc_low": scale.auc_low, "scale_auc_high": scale.auc_high,
                "scale": scale.label}

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
        notes = [n for n in (test.note, self.scale.sentence if self.scale else "") if n]
        if notes:
            fig.text(0.0, 0.0, "\n".join(notes), ha="left", va="top", fontsize=7, wrap=True)
        return fig

    def scale_figure(self) -> Figure:
        """The card's AUC interval on the calibration scale: the real users' noise floor,
        RecLLMSim's LLM users (and two studies of people, when measured), then this card."""
        points = self.points
        if points is None:
            raise ValueError(f"{self.title}: a card made without calibration points has no scale")
        rows = [("real users: half vs half", points.floor), *([("people: study vs study", points.studies)]
                                                              if points.studies else []),
                ("RecLLMSim LLM users vs people", points.signal)]
        fig = Figure(figsize=(6.4, 2.4), layout="constrained")
        ax = fig.subplots()
        for y, (_, p) in enumerate(rows):
            ax.errorbar([p.auc], [y], xerr=[[p.auc - p.auc_low], [p.auc_high - p.auc]], fmt="s", color="grey",
                        capsize=3)
        y = len(rows)
        if self.scale is not None and not math.isnan(self.scale.auc):
            sc = self.scale
            ax.errorbar([sc.auc], [y], xerr=[[sc.auc - sc.auc_low], [sc.auc_high - sc.auc]], fmt="o",
                        color="#1f6fb4", capsize=3)
        ax.axvspan(0.0, points.floor.auc_high, color="#e5f0e5", zorder=0)
        ax.set_yticks(range(len(rows) + 1), [name for name, _ in rows] + [f"this card: {self.b_label}"])
        ax.set_xlim(0.3, 1.0)
        ax.set_xlabel("classifier AUC on the calibrated features, 95% interval (shaded: noise floor)")
        ax.set_title(f"{self.title}: {self.scale.label if self.scale else 'no scale'}", fontsize=9)
        return fig


SHIPPED = "shipped"


def make_card(title: str, a: pd.DataFrame, b: pd.DataFrame, a_label: str, b_label: str,
              features: Sequence[str] = FEATURES, *, permutations: int = 200, seed: int = 0,
              alpha: float = 0.05, calibration: CalibrationPoints | str | None = SHIPPED) -> FidelityCard:
    """A card of `b` against `a`; on the shipped scale unless `calibration` gives other points
    (or a path to a points file), or is None (no scale)."""
    table = standardised_differences(a, b, features)
    placement: Placement | None = None
    points: CalibrationPoints | None = None
    if calibration is not None:
        points = calibration if isinstance(calibration, CalibrationPoints) \
            else load_calibration(None if calibration == SHIPPED else calibration)
        calibrated = [f for f in points.features if f in a.columns and f in b.columns]
        test = classifier_test(a, b, calibrated, permutations=0, seed=seed)
        placement = place(test, points, tuple(features))
        table = feature_scale(table, points)
    return FidelityCard(title, a_label, b_label, table,
                        classifier_test(a, b, features, permutations=permutations, seed=seed),
                        chamfer_coverage(a, b, features), alpha, placement, points)


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


def scale_summary(cards: Sequence[FidelityCard]) -> pd.DataFrame:
    """One row per card: its AUC on the calibrated features, its interval, its place on the
    scale and the sentence that says why."""
    rows = [{"card": c.title, **c.scale_summary(), "why": c.scale.sentence if c.scale else ""} for c in cards]
    return pd.DataFrame(rows, columns=["card", "scale_auc", "scale_auc_low", "scale_auc_high", "scale", "why"])


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
    """Each card's table and figure under a file-safe name (`card-<title>`; its scale figure
    `card-<title>-scale` when it has one), plus the summary."""
    names = [f"card-{re.sub(r'[^A-Za-z0-9]+', '-', c.title).strip('-').lower()}" for c in cards]
    tables = {"cards": card_summary(cards), **{n: c.table for n, c in zip(names, cards, strict=True)}}
    figures = {n: c.figure() for n, c in zip(names, cards, strict=True)}
    figures |= {f"{n}-scale": c.scale_figure() for n, c in zip(names, cards, strict=True) if c.points is not None}
    return tables, figures
