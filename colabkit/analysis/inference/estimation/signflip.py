"""The exact robustness test: a studentized sign-flip test over tasks.

Under the null of no effect with tasks exchangeable in sign (each task's paired differences
symmetric about 0), flipping the sign of all of one task's differences leaves their
distribution unchanged. The statistic is the confirmatory test's own t (mean paired difference
over its task-clustered CR1 SE, `colabkit.analysis.inference.decisions.contrasts`), recomputed for every
flip: with S_g the sum and n_g the count of task g's differences and e_g = +/-1,

    mean* = sum_g e_g S_g / N,   SE* = sqrt(G/(G-1) sum_g (e_g S_g - n_g mean*)^2) / N.

The p-value is the share of flips whose |t*| reaches |t|: over all 2^G flips when that is at
most `exact_flips` (exact), otherwise over `flips` random flips from `seed` plus the identity,
(1 + #{|t*| >= |t|}) / (1 + flips), valid at any number of flips. It assumes no normality, so it
holds its level on bounded, zero/one-inflated scores (`benchmarks/inference.py`).

No spread between tasks (every task's differences sum to n_g times one constant, within
`tolerance`): t is not defined. A non-zero constant shift is the most extreme outcome there
is: only the identity and the all-flipped assignment reach it, so p = 2 / 2^G exactly; a zero
shift gives p = 1.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

CHUNK = 8192
"""Flips evaluated at once (memory: CHUNK x tasks floats)."""


def task_sums(d: pd.Series, tasks: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(S_g, n_g) per task of the non-missing differences."""
    frame = pd.DataFrame({"d": np.asarray(d, dtype=float), "g": np.asarray(tasks)}).dropna()
    grouped = frame.groupby("g")["d"]
    return grouped.sum().to_numpy(float), grouped.size().to_numpy(float)


def zero_spread(sums: np.ndarray, counts: np.ndarray, tolerance: float = 1e-9) -> bool:
    """True when every task's mean difference is the same (within `tolerance`, relative to the
    largest task mean, absolute below 1): the clustered SE is 0 up to rounding."""
    if len(sums) < 2:
        return False
    means = sums / counts
    return bool(np.ptp(means) <= tolerance * max(1.0, float(np.abs(means).max())))


def _abs_t(signs: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """|t| of the CR1 test for each row of `signs` (flips x tasks)."""
    g, n = len(sums), counts.sum()
    flipped = signs * sums
    mean = flipped.sum(axis=1) / n
    residual = flipped - mean[:, None] * counts
    se = np.sqrt(g / (g - 1) * (residual**2).sum(axis=1)) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, np.abs(mean) / se, np.where(mean != 0, np.inf, 0.0))


def sign_flip_p(d: pd.Series, tasks: pd.Series, flips: int = 100_000, seed: int = 0, exact_flips: int = 2**16,
                tolerance: float = 1e-9) -> tuple[float, str]:
    """(p, how) of the studentized sign-flip test of mean(d) = 0 over `tasks` (module docstring).

    `how` is "exact", "random" or "zero spread"; p is NaN below two tasks.
    """
    sums, counts = task_sums(d, tasks)
    g = len(sums)
    if g < 2:
        return math.nan, ""
    if zero_spread(sums, counts, tolerance):
        shift = float(sums.sum() / counts.sum())
        return (1.0 if abs(shift) <= tolerance else 2.0 / 2.0**g), "zero spread"
    observed = float(_abs_t(np.ones((1, g)), sums, counts)[0]) * (1 - 1e-12)  # ties count as reaching it
    if 2.0**g <= exact_flips:
        reached = 0
        for start in range(0, 2**g, CHUNK):
            codes = np.arange(start, min(start + CHUNK, 2**g), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(g)) & 1)
            reached += int((_abs_t(signs, sums, counts) >= observed).sum())
        return reached / 2.0**g, "exact"
    rng = np.random.default_rng(seed)
    reached, done = 0, 0
    while done < flips:
        size = min(CHUNK, flips - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, g))
        reached += int((_abs_t(signs, sums, counts) >= observed).sum())
        done += size
    return (1 + reached) / (1 + flips), "random"
