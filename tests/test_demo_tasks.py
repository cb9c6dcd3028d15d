"""The shipped demo tasks: reproducible from their generator, and their gold is true of the data.

Each planted fact is recomputed from the committed CSVs with `read_table`, independently of
the generator's code, so a change to the generator or the files that breaks a gold answer
fails here.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from colabkit.tasks import demo_root, load_tasks, read_table, validate_tasks
from colabkit.tasks.demo import generate

FOLDER = demo_root() / "real" / "test" / "demo_archaeology"


@pytest.fixture(scope="module")
def suite():
    return load_tasks()


def test_generator_reproduces_the_committed_files(tmp_path):
    written = generate(tmp_path)
    committed = sorted(p for p in demo_root().rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert [p.relative_to(tmp_path) for p in written] == [p.relative_to(demo_root()) for p in committed]
    for new, old in zip(written, committed):
        assert new.read_bytes() == old.read_bytes(), old.name


def test_demo_root_is_a_clean_real_format_data_root(suite):
    assert suite.root == demo_root()
    assert 3 <= len(suite.tasks) <= 5
    assert set(suite.gold) == set(suite.ids)
    report = validate_tasks()
    assert report.problems == () and report.task_count == len(suite.tasks)
    for path in FOLDER.glob("metadata_*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(doc["queries"][0], list) and "raw" in doc["datasets"][0]["columns"]
        assert doc["domain_knowledge"] and doc["workflow_tags"]
    for task in suite.tasks:
        assert suite.gold_for(task.id).hypothesis not in task.model_dump_json()


def test_demo_csvs_are_small_and_carry_the_real_quirks():
    for path in FOLDER.glob("*.csv"):
        assert path.stat().st_size < 50_000, path.name
    pollen_text = (FOLDER / "pollen_openness.csv").read_text(encoding="utf-8")
    assert pollen_text.startswith(",calBP,CE,") and ',"' in pollen_text  # saved index, quoted commas
    assert ",," in pollen_text  # gaps in the record
    assert (FOLDER / "settlement_proxies.csv").read_text(encoding="utf-8").startswith(",CE,")
    hoard_text = (FOLDER / "hoard_finds.csv").read_text(encoding="utf-8")
    assert '"-0,' in hoard_text and "\n2900,YN," in hoard_text and hoard_text.split("\n2900,")[1].split("\n")[0].endswith(",0")
    pollen = read_table(FOLDER / "pollen_openness.csv")
    assert pollen["openness_PC1"].dtype == "float64" and pollen["openness_PC1"].isna().sum() >= 1
    assert list(pollen.columns) == ["calBP", "CE", "openness_PC1", "openness_smooth_100y"]
    assert read_table(FOLDER / "hoard_finds.csv")["amber_z"].dtype == "float64"


def _strictly(values: pd.Series, rising: bool) -> bool:
    diffs = values.diff().dropna()
    return bool((diffs > 0).all() if rising else (diffs < 0).all())


def check_axes_peak(gold: str) -> None:
    hoard = read_table(FOLDER / "hoard_finds.csv")
    top = hoard["axes"].max()
    assert (hoard["axes"] == top).sum() == 1
    assert hoard.loc[hoard["axes"].idxmax(), "BCE"] == 2300
    assert "2300 BCE" in gold and "axe" in gold


def _longest_joint_rise(frame: pd.DataFrame, year: str, a: str, b: str) -> tuple[int, int]:
    """First and last year of the longest stretch in which both columns rise at every step."""
    years = frame[year].tolist()
    up = ((frame[a].diff() > 0) & (frame[b].diff() > 0)).tolist()
    best, start = (0, 0, 0), None
    for i in range(1, len(years)):
        if not up[i]:
            start = None
            continue
        start = years[i - 1] if start is None else start
        if years[i] - start > best[0]:
            best = (years[i] - start, start, years[i])
    return best[1], best[2]


def check_co_rise(gold: str) -> None:
    proxies = read_table(FOLDER / "settlement_proxies.csv").sort_values("CE")
    assert _longest_joint_rise(proxies, "CE", "house_size_m2", "monument_count") == (-3400, -3000)
    window = proxies[(proxies["CE"] >= -3400) & (proxies["CE"] <= -3000)]
    assert window["house_size_m2"].corr(window["monument_count"]) > 0.95
    assert "3400" in gold and "3000" in gold and "house size" in gold and "monument count" in gold


def check_openness_decline(gold: str) -> None:
    pollen = read_table(FOLDER / "pollen_openness.csv").sort_values("CE")
    assert pollen.loc[pollen["openness_PC1"].idxmax(), "CE"] == -1500
    after = pollen[pollen["CE"] >= -1500]
    assert after["openness_PC1"].notna().all() and _strictly(after["openness_PC1"], rising=False)
    assert after["CE"].iloc[-1] == -500
    assert "1500 BCE" in gold and "declines" in gold


def check_daggers_and_amber(gold: str) -> None:
    hoard = read_table(FOLDER / "hoard_finds.csv").sort_values("BCE", ascending=False)
    late = hoard[hoard["BCE"] <= 1700]
    assert hoard.loc[hoard["daggers"].idxmax(), "BCE"] == 1700
    assert _strictly(late["daggers"], rising=False)
    rising = [c for c in ("axes", "daggers", "sickles", "amber_z") if _strictly(late[c], rising=True)]
    assert rising == ["amber_z"]  # the answer to "which category rises" is unique
    assert "1700 BCE" in gold and "dagger" in gold and "amber" in gold


CHECKS = {
    "demo_archaeology/0/0": (check_axes_peak, "hoard_finds.csv"),
    "demo_archaeology/1/0": (check_co_rise, "settlement_proxies.csv"),
    "demo_archaeology/2/0": (check_openness_decline, "pollen_openness.csv"),
    "demo_archaeology/3/0": (check_daggers_and_amber, "hoard_finds.csv"),
}


def test_every_demo_task_has_a_check(suite):
    assert set(CHECKS) == set(suite.ids)


@pytest.mark.parametrize("task_id", sorted(CHECKS))
def test_gold_hypothesis_is_true_of_the_data(suite, task_id):
    check, needed = CHECKS[task_id]
    task = suite.get(task_id)
    assert needed in [d.name for d in task.datasets]  # the task gives the file that answers it
    check(suite.gold_for(task_id).hypothesis)


def test_no_briefing_of_a_demo_task_contains_its_gold(suite):
    """The gold check the real archaeology tasks get, on the demo tasks every install has."""
    from colabkit.team.briefing import private_briefing

    for task in suite.tasks:
        gold = suite.gold_for(task.id).hypothesis.strip().lower()
        for pid in ("ai", "D", "R"):
            for max_chars in (None, 1600, 600):
                text = private_briefing(pid, task, max_chars=max_chars).lower()
                assert gold not in text and gold[:40] not in text, (task.id, pid, max_chars)
        assert "data/" in private_briefing("D", task)  # the briefing was really built
