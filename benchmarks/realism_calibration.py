"""The realism instrument calibrated on RecLLMSim: real vs simulated users on the same tasks.

    PYTHONPATH=. .venv/bin/python benchmarks/realism_calibration.py --recllmsim /path/to/RecLLMSim \
        [--simulatorarena /path/to/SimulatorArena] [--write-points]

Reads local copies of the repositories (never shipped), fingerprints every conversation
(`corpus_fingerprints`), and calibrates (`calibrate`): per fingerprint the real-vs-real
(two halves of the people) and real-vs-simulated |g| and the real-vs-simulated AUC with its
interval; combined, the classifier and Chamfer for both, and two studies of people against
each other. Prints the markdown table docs/realism.md shows and writes a record to
benchmarks/results/realism_calibration.json; with --write-points, also the package's
calibration points (colabkit/analysis/realism/calibration.json) that cards are read against.
With --simulatorarena, SimulatorArena's English people are fingerprinted too and their own
noise floor (two halves by worker) is reported beside RecLLMSim's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import benchmodel as bm
import numpy as np

from colabkit.analysis.realism import corpus_fingerprints, recllmsim_tables, simulatorarena_tables
from colabkit.analysis.realism.calibration import FeaturePoint, between, calibrate, calibration_markdown, halves
from colabkit.analysis.realism.fingerprints import FEATURES, PERSON
from colabkit.analysis.realism.recllmsim import RECLLMSIM
from colabkit.analysis.realism.scale import POINTS_FILE, CalibrationPoints

ROOT = Path(__file__).resolve().parents[1]


def _commit(repo: Path) -> str:
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else "unknown (not a git checkout)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recllmsim", required=True, type=Path, help="local copy of wzf2000/RecLLMSim")
    parser.add_argument("--recllmsim-commit", default="", help="its commit, when the copy is not a git checkout")
    parser.add_argument("--simulatorarena", type=Path, help="local copy of microsoft/SimulatorArena")
    parser.add_argument("--repeats", type=int, default=20, help="random halves per median |g| and Chamfer")
    parser.add_argument("--draws", type=int, default=1000, help="bootstrap draws per AUC interval")
    parser.add_argument("--write-points", action="store_true", help="write the package's calibration points")
    args = parser.parse_args()
    started = time.monotonic()
    prints = corpus_fingerprints(*recllmsim_tables(args.recllmsim))
    table, points = calibrate(prints, repeats=args.repeats, draws=args.draws)
    feats = tuple(table["feature"])
    people = prints[prints["kind"] == PERSON]
    part = people["user_id"].str.split("/").str[0]
    studies = between(people[part == "real_human_user"], people[part == "human_exp_V2"], feats,
                      repeats=args.repeats, draws=args.draws)
    uncalibrated = tuple(f for f in FEATURES if f not in feats)
    markdown = calibration_markdown(table, points, uncalibrated)
    markdown += (f"\n\nTwo studies of people on the same tasks (`real_human_user` vs `human_exp_V2`): AUC "
                 f"{studies.auc:.2f} [{studies.auc_low:.2f}, {studies.auc_high:.2f}], Chamfer ratio "
                 f"{studies.chamfer_ratio:.2f}.")
    record: dict[str, object] = {}
    if args.simulatorarena:
        arena = corpus_fingerprints(*simulatorarena_tables(args.simulatorarena))
        one, two = halves(arena, np.random.default_rng(0))
        arena_floor = between(one, two, feats, repeats=args.repeats, draws=args.draws)
        markdown += (f"\n\nSimulatorArena's people (English, {len(arena)} conversations, {arena['user_id'].nunique()} "
                     f"workers), half vs half: AUC {arena_floor.auc:.2f} [{arena_floor.auc_low:.2f}, "
                     f"{arena_floor.auc_high:.2f}], Chamfer ratio {arena_floor.chamfer_ratio:.2f}.")
        record["simulatorarena_floor"] = arena_floor.model_dump()
    commit = args.recllmsim_commit or _commit(args.recllmsim)
    sims = prints[prints["kind"] != PERSON]
    calibration = CalibrationPoints(
        corpus=RECLLMSIM, commit=commit, created=datetime.now(UTC).strftime("%Y-%m-%d"),
        command=f"benchmarks/realism_calibration.py --repeats {args.repeats} --draws {args.draws}", language="zh",
        features=feats, uncalibrated=uncalibrated, n_people=len(people), n_people_users=people["user_id"].nunique(),
        n_simulated=len(sims), n_simulated_users=sims["user_id"].nunique(), floor=points["floor"],
        signal=points["signal"], studies=studies,
        per_feature={r["feature"]: FeaturePoint(**{k: r[k] for k in FeaturePoint.model_fields})
                     for r in table.to_dict("records")})
    print(markdown)
    print(f"\n{len(people)} people's conversations ({calibration.n_people_users} people), {len(sims)} simulated "
          f"({calibration.n_simulated_users} profiles); {time.monotonic() - started:.0f} s")
    bm.write_result("realism_calibration", {**record, "command": " ".join(sys.argv), "markdown": markdown,
                                         "points": calibration.model_dump(),
                                         "seconds": round(time.monotonic() - started)})
    if args.write_points:
        target = ROOT / "colabkit" / "analysis" / "realism" / POINTS_FILE
        target.write_text(calibration.model_dump_json(indent=1) + "\n", encoding="utf-8")
        print("wrote", target.relative_to(ROOT))


if __name__ == "__main__":
    main()
