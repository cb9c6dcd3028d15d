"""Generate the shipped demo tasks: `python -m colabkit.tasks.demo [--out DIR]`.

Why synthetic tasks: the suite must run from a fresh clone without DiscoveryBench (whose
data the repository does not redistribute), and tests need tasks whose answers are known
for certain. These four tasks imitate DiscoveryBench's real archaeology tasks (same file
format, same kind of temporal question) but every gold hypothesis is *planted* in the data,
so it is true by construction; `tests/test_demo_tasks.py` recomputes each from the CSVs.

Output (committed under `colabkit/tasks/demo_data/`, rewritten by running this module):
`real/test/demo_archaeology/metadata_<k>.json` + three CSVs, and `eval/answer_key_real.csv`.
The CSVs copy two quirks of the real data so the suite's readers are exercised: decimal
commas inside quoted fields (`hoard_finds.csv` amber_z, `pollen_openness.csv`), and a saved,
unnamed index column (`pollen_openness.csv`, `settlement_proxies.csv`).

Planted facts (what each gold hypothesis states):
0. axes per century peak in the century starting 2300 BCE (the peak is set above any
   possible background value);
1. house size and monument count both rise at every step from 3400 to 3000 BCE and in no
   other run of that length (the row before 3400 BCE is held above the window's start);
2. the pollen openness score is highest at 1500 BCE and falls at every step after it (the
   decline per step exceeds the noise);
3. from 1700 BCE onwards daggers fall and amber rises at every step.

Only `random.Random(seed).random()`-based draws are used: Python keeps that sequence stable
across versions, so the committed files are reproducible byte for byte.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from pathlib import Path

from colabkit.tasks.layout import demo_root

SEED = 20250601
FOLDER = "demo_archaeology"
PHASES = (("EN", 4000, 3500), ("MN", 3400, 3000), ("YN", 2900, 2300),
          ("LN", 2200, 1700), ("OBA", 1600, 1200), ("YBA", 1100, 500))

DOMAIN_KNOWLEDGE = (
    "1. This is synthetic demonstration data made by colabkit's generator; it imitates the "
    "archaeology tasks of DiscoveryBench but records no real finds. "
    "2. Hoard finds are counted per century; a century is labelled by its first year BCE "
    "(2300 means 2300-2201 BCE). "
    "3. Chronological phases: Early Neolithic (EN, 4000-3500 BCE), Middle Neolithic (MN, "
    "3400-3000 BCE), Younger Neolithic (YN, 2900-2300 BCE), Late Neolithic (LN, 2200-1700 BCE), "
    "Older Bronze Age (OBA, 1600-1200 BCE), Younger Bronze Age (YBA, 1100-500 BCE). "
    "4. Amber is reported as a z-score of finds per century, so its values can be negative. "
    "5. The openness score is the first principal component (PC1) of the pollen record; higher "
    "values mean a more open, cleared landscape and serve as a proxy of human impact. "
    "6. Years CE are negative before the common era (CE = -BCE) and calBP = 1950 - CE. "
    "7. House size and monument count are proxies of social organisation; they are sampled "
    "every 50 years and analysed in 50-year steps."
)
TAGS = "time series analysis, data cleaning, data visualization"

HOARD = ("hoard_finds.csv", "Counts of finds in dated hoards per century, with amber as a z-score.", [
    ("BCE", "First year of the century, Before Common Era"),
    ("phase", "Chronological phase (EN, MN, YN, LN, OBA, YBA)"),
    ("axes", "Number of axes found in hoards of the century"),
    ("daggers", "Number of daggers found in hoards of the century"),
    ("sickles", "Number of sickles found in hoards of the century"),
    ("amber_z", "Z values for amber finds of the century"),
])
POLLEN = ("pollen_openness.csv", "Pollen-based landscape openness score every 25 years.", [
    ("Unnamed", "Index: the CE year of the sample"),
    ("calBP", "Calibrated years Before Present (1950 AD)"),
    ("CE", "Common Era year (negative before the common era)"),
    ("openness_PC1", "PC1 of the pollen record: landscape openness score (blank where no sample)"),
    ("openness_smooth_100y", "Openness score smoothed with a centred 100-year mean"),
])
SETTLEMENT = ("settlement_proxies.csv", "Settlement proxies sampled every 50 years.", [
    ("CE", "Common Era year (negative before the common era)"),
    ("calBP", "Calibrated years Before Present (1950 AD)"),
    ("house_size_m2", "Mean excavated house floor area in square metres"),
    ("monument_count", "Number of monuments in use"),
])

# (question type, question, gold hypothesis, datasets listed, extra workflow tags)
TASKS = (
    ("context", "In which century did axes become most frequent in hoards?",
     "Around 2300 BCE, axes in hoards peak: the century beginning 2300 BCE has the highest "
     "axe count of the whole record.", (HOARD, POLLEN, SETTLEMENT), ""),
    ("context", "In which period did house size and monument count rise together?",
     "Between 3400 and 3000 BCE, house size and monument count rise together, both increasing "
     "at every 50-year step.", (SETTLEMENT, HOARD, POLLEN), ", correlation analysis"),
    ("context", "After which date does landscape openness decline?",
     "After 1500 BCE, landscape openness declines steadily: the openness score peaks at 1500 BCE "
     "and falls at every step until 500 BCE.", (POLLEN, SETTLEMENT), ", pollen modelling"),
    ("variables", "Which find category rises while daggers decline from 1700 BCE onwards?",
     "From 1700 BCE onwards, dagger finds decline steadily while amber finds rise.",
     (HOARD, POLLEN, SETTLEMENT), ""),
)


def _phase(bce: int) -> str:
    return next(name for name, start, end in PHASES if start >= bce >= end)


def _comma(value: float, digits: int) -> str:
    """Write a number the way the real files do: `-0,44`; whole numbers plainly (`0`)."""
    value = round(value, digits)
    if value == int(value):
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").replace(".", ",")


def _hoard_rows(rng: random.Random) -> list[list]:
    def uniform(a: float, b: float) -> float:
        return a + (b - a) * rng.random()

    def integer(a: int, b: int) -> int:
        return a + int(rng.random() * (b - a + 1))

    rows = []
    for bce in range(4000, 400, -100):
        axes = integer(8, 20) + {2500: 6, 2400: 12, 2200: 10}.get(bce, 0)
        if bce == 2300:
            axes = 38 + integer(0, 4)  # background + bumps never exceed 32
        if bce > 2200:
            daggers = integer(2, 6)
        elif bce > 1700:
            daggers = 10 + 4 * (2200 - bce) // 100 + integer(0, 2)  # at most 28
        else:
            daggers = 30 - 2 * (1700 - bce) // 100 + integer(0, 1)  # falls >= 1 per step
        if bce == 2900:
            amber = 0.0  # written as a bare 0 among quoted decimal commas, as in capital.csv
        elif bce > 1700:
            amber = uniform(-1.2, 0.3)
        else:
            amber = -0.6 + 0.2 * (1700 - bce) / 100 + uniform(0, 0.08)  # rises >= 0.11 per step
        rows.append([bce, _phase(bce), axes, daggers, integer(5, 15), _comma(amber, 2)])
    return rows


def _settlement_rows(rng: random.Random) -> list[list]:
    rows = []
    years = list(range(-4000, -500, 50))
    for index, ce in enumerate(years):
        if -3400 <= ce <= -3000:
            k = (ce + 3400) // 50
            house = 42 + 4.5 * k + rng.random()  # rises >= 3.4 per step
            monuments = 4 + 2 * k + int(rng.random() * 2)  # rises >= 1 per step
        else:
            house = 30 + 30 * rng.random()
            low = 8 if ce == -3450 else 0  # above the window's start: the co-rise begins at 3400
            monuments = low + int(rng.random() * (13 - low))
        rows.append([index, ce, 1950 - ce, f"{house:.1f}", monuments])
    return rows


def _pollen_rows(rng: random.Random) -> list[list]:
    years = list(range(-4000, -475, 25))
    raw: list[float | None] = []
    for ce in years:
        if ce < -1500:
            trend = 1.0 + 4.0 * (ce + 4000) / 2475
            value = trend + 1.2 * (rng.random() - 0.5)  # at most 5.6
            # Gaps like the real record's, never two in a row (the smoothing needs a sample).
            missing = -3900 < ce < -2000 and raw[-1] is not None and rng.random() < 0.12
            raw.append(None if missing else value)
        else:
            raw.append(6.0 - 0.008 * (ce + 1500) + 0.16 * (rng.random() - 0.5))
    rows = []
    for i, ce in enumerate(years):
        window = [v for v in raw[max(0, i - 2):i + 3] if v is not None]
        smooth = sum(window) / len(window)
        observed = raw[i]
        shown = "" if observed is None else _comma(observed, 4)
        rows.append([ce, 1950 - ce, ce, shown, _comma(smooth, 4)])
    return rows


def _csv_text(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _metadata(k: int, spec: tuple) -> str:
    qtype, question, _gold, datasets, extra_tags = spec
    doc = {
        "id": k,
        "domain": "humanities",
        "workflow_tags": TAGS + extra_tags,
        "domain_knowledge": DOMAIN_KNOWLEDGE,
        "datasets": [
            {"name": name, "description": description,
             "columns": {"raw": [{"name": c, "description": d} for c, d in columns]}}
            for name, description, columns in datasets
        ],
        "intermediate": [],
        "hypotheses": {"main": [{}], "intermediate": []},
        "queries": [[{"qid": 0, "question_type": qtype, "question": question}]],
    }
    return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


README = """# colabkit demo tasks (synthetic)

Four small archaeology-flavoured tasks in DiscoveryBench's *real* format, made by
`colabkit/tasks/demo.py` (seeded; `python -m colabkit.tasks.demo` rewrites this folder
byte for byte). They are not DiscoveryBench data and record no real finds. Each gold
hypothesis (in `eval/answer_key_real.csv`, for scoring only) is planted in the data, and
`tests/test_demo_tasks.py` recomputes it from the CSVs.
"""


def generate(out: Path, seed: int = SEED) -> list[Path]:
    """Write the demo data root under `out`; returns the files written."""
    rng = random.Random(seed)
    folder = out / "real" / "test" / FOLDER
    files = {
        folder / HOARD[0]: _csv_text([c for c, _ in HOARD[2]], _hoard_rows(rng)),
        folder / SETTLEMENT[0]: _csv_text([""] + [c for c, _ in SETTLEMENT[2]], _settlement_rows(rng)),
        folder / POLLEN[0]: _csv_text([""] + [c for c, _ in POLLEN[2][1:]], _pollen_rows(rng)),
        out / "eval" / "answer_key_real.csv": _csv_text(
            ["dataset", "metadataid", "query_id", "gold_hypo"],
            [[FOLDER, k, 0, spec[2]] for k, spec in enumerate(TASKS)]),
        out / "README.md": README,
    }
    for k, spec in enumerate(TASKS):
        files[folder / f"metadata_{k}.json"] = _metadata(k, spec)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
    return sorted(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m colabkit.tasks.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=demo_root(), help="data root to write (default: the shipped one)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    for path in generate(args.out, args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
