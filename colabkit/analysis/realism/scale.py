"""The calibration points a card is read against, shipped with the package.

`calibration.json` (beside this module) holds the points `calibrate` measured on RecLLMSim,
written by `benchmarks/realism_calibration.py --write-points` with its provenance (corpus,
commit, command, date, sizes), so a card can be read on a scale without the corpus:
- `floor`: two halves of the real users (the noise floor);
- `signal`: the real users against RecLLMSim's LLM-simulated users on the same tasks;
- `studies`: the people of one study against those of another on the same tasks (RecLLMSim's
  `real_human_user` vs `human_exp_V2`), when measured;
- `per_feature`: each calibrated feature's |g| at the floor and the signal, and its AUC.

`place` puts a card's classifier AUC (recomputed on the calibrated features only, so the two
numbers measure the same thing) on that scale by its interval, never by its point alone:
within the floor (its interval ends at or below the floor's upper bound), as far apart as
the LLM users are from people (it starts at or above the signal's lower bound), between (it
lies between the two), or not placed (it reaches across one of them: more sessions are
needed). The words hold for any card: a people-vs-simulator card's two samples, or a D-vs-R
card's two personas, are as far apart as two halves of people, or as RecLLMSim's LLM users
and its people.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from colabkit.analysis.realism.calibration import FeaturePoint, ScalePoint
from colabkit.analysis.realism.compare import ClassifierTest
from colabkit.analysis.realism.corpora import CorpusSource
from colabkit.errors import ColabkitError

SCHEMA_VERSION = 1
POINTS_FILE = "calibration.json"
WITHIN = "within the real users' noise floor"
BETWEEN = "between the noise floor and RecLLMSim's LLM users"
AS_FAR = "as far apart as RecLLMSim's LLM users are from people"
NOT_PLACED = "not placed"
ALWAYS_UNCOVERED = (
    "another domain: RecLLMSim's users plan trips, gifts, recipes and learning with a chat assistant; the study's "
    "D and R analyse data with an AI teammate in a shared notebook",
    "another language: RecLLMSim's people wrote Chinese, and its simulated users' Chinese is a machine translation "
    "of their English",
    "users rather than collaborators: a user asks and reacts; a collaborator also runs cells, edits the result and "
    "decides requests, and none of those features is calibrated",
    "another simulator: RecLLMSim's LLM users are one prompt and model; a better or worse simulator sits elsewhere "
    "on the scale",
)


class CalibrationPoints(BaseModel):
    """The shipped scale with its provenance (module docstring)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    corpus: CorpusSource
    commit: str
    command: str
    created: str
    language: str
    features: tuple[str, ...]
    uncalibrated: tuple[str, ...]
    n_people: int
    n_people_users: int
    n_simulated: int
    n_simulated_users: int
    floor: ScalePoint
    signal: ScalePoint
    studies: ScalePoint | None = None
    per_feature: dict[str, FeaturePoint]
    not_covered: tuple[str, ...] = ALWAYS_UNCOVERED

    def describe(self) -> str:
        """One line of provenance: corpus, commit, date, sizes, features."""
        return (f"scale: {self.corpus.name} at {self.commit[:12]} ({self.created}; {self.corpus.licence}), "
                f"{self.n_people} conversations of {self.n_people_users} people and {self.n_simulated} of "
                f"{self.n_simulated_users} simulated profiles; features: {', '.join(self.features)}")


def load_calibration(path: Path | str | None = None) -> CalibrationPoints:
    """The points at `path`, by default the ones shipped in the package; one clear line when
    the file is missing, not JSON or of another schema."""
    if path is None:
        source = resources.files("colabkit.analysis.realism").joinpath(POINTS_FILE)
        name, text = f"colabkit/analysis/realism/{POINTS_FILE}", source.read_text(encoding="utf-8")
    else:
        try:
            name, text = str(path), Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ColabkitError(f"{path}: no such calibration file") from None
    try:
        points = CalibrationPoints.model_validate_json(text)
    except ValidationError as exc:
        raise ColabkitError(f"{name}: not a calibration file ({exc.errors()[0]['msg']})") from None
    if points.schema_version != SCHEMA_VERSION:
        raise ColabkitError(f"{name}: calibration schema {points.schema_version}, this version reads {SCHEMA_VERSION}")
    return points


@dataclass(frozen=True)
class Placement:
    """A card's AUC on the calibrated features, where it falls on the scale, and why."""

    auc: float
    auc_low: float
    auc_high: float
    label: str
    sentence: str
    features: tuple[str, ...]
    not_covered: tuple[str, ...]


def place(test: ClassifierTest, points: CalibrationPoints, card_features: tuple[str, ...] = ()) -> Placement:
    """Where `test` (a classifier test on the calibrated features) falls on the scale."""
    floor, signal = points.floor, points.signal
    lo, hi = test.auc_low, test.auc_high
    scale = (f"noise floor: two halves of RecLLMSim's people, AUC up to {floor.auc_high:.2f}; "
             f"RecLLMSim's LLM users: AUC {signal.auc:.2f} [{signal.auc_low:.2f}, {signal.auc_high:.2f}]")
    if math.isnan(lo) or math.isnan(hi):
        label, why = NOT_PLACED, f"no interval ({test.note or 'too few rows'})"
    elif hi <= floor.auc_high:
        label, why = WITHIN, f"its interval [{lo:.2f}, {hi:.2f}] ends within the floor"
    elif lo >= signal.auc_low:
        label, why = AS_FAR, f"its interval [{lo:.2f}, {hi:.2f}] starts where the LLM users' does"
    elif lo > floor.auc_high and hi < signal.auc_low:
        label, why = BETWEEN, f"its interval [{lo:.2f}, {hi:.2f}] lies between the two"
    else:
        label, why = NOT_PLACED, f"its interval [{lo:.2f}, {hi:.2f}] reaches across a calibration point"
    outside = tuple(f for f in card_features if f not in points.features)
    uncovered = points.not_covered + ((f"features of the card with no calibration point: {', '.join(outside)}",)
                                      if outside else ())
    sentence = f"AUC {test.auc:.2f} on the {len(test.features)} calibrated features: {label} ({why}; {scale})"
    return Placement(test.auc, lo, hi, label, sentence, test.features, uncovered)


def feature_scale(table: pd.DataFrame, points: CalibrationPoints) -> pd.DataFrame:
    """A card's table with each calibrated feature's floor and signal |g| and where its own g
    falls, by its interval like the card (`scale`): "within floor" (the interval inside
    ±floor), "as far as LLM users" (the interval outside ±signal), "between" (outside ±floor,
    inside ±signal), "not placed" (it reaches across one of them), empty when uncalibrated or
    without an interval."""
    floor = table["feature"].map({f: p.floor_g for f, p in points.per_feature.items()})
    signal = table["feature"].map({f: p.signal_g for f, p in points.per_feature.items()})
    low, high = table["ci_low"], table["ci_high"]
    nearest = pd.concat([low.abs(), high.abs()], axis=1).min(axis=1).where(low * high > 0, 0.0)
    farthest = pd.concat([low.abs(), high.abs()], axis=1).max(axis=1)
    where = pd.Series("", index=table.index, dtype="object")
    known = low.notna() & high.notna() & floor.notna()
    where[known] = "not placed"
    where[known & (farthest <= floor)] = "within floor"
    where[known & (nearest > floor) & (farthest < signal)] = "between"
    where[known & (nearest >= signal)] = "as far as LLM users"
    return table.assign(floor_g=floor, signal_g=signal, scale=where)
