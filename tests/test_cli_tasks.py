"""`colabkit tasks ...` and `colabkit demo` as a user runs them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.env import discoverybench_root, shared_data

from colabkit.cli import command_modules, main
from colabkit.tasks import demo_root

SHARED = discoverybench_root()
DEMO_GOLD_0 = "Around 2300 BCE, axes in hoards peak"


@pytest.fixture
def shared() -> Path:
    return shared_data()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_command_groups_are_discovered():
    assert {"tasks_cmd", "demo_cmd"} <= set(command_modules())


def test_list_defaults_to_the_demo_tasks(capsys):
    code, out, err = run(capsys, "tasks", "list")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4
    assert lines[0] == "demo_archaeology/0/0  [context] In which century did axes become most frequent in hoards?"
    assert err.strip() == f"4 tasks in {demo_root()}"


def test_list_real_data_with_filters(capsys, shared):
    code, out, _ = run(capsys, "tasks", "list", "--data-root", str(shared))
    assert code == 0 and len(out.splitlines()) == 38
    code, out, _ = run(capsys, "tasks", "list", "--data-root", str(shared), "--id", "archaeology/3",
                       "--id", "archaeology/12/0", "--split", "real/test", "--domain", "archaeology")
    assert [line.split()[0] for line in out.splitlines()] == ["archaeology/3/0", "archaeology/12/0"]


def test_show_hides_gold_unless_asked(capsys, shared):
    code, out, _ = run(capsys, "tasks", "show", "archaeology/12/0", "--data-root", str(shared))
    assert code == 0
    assert "query: In which century did the Depots peak?" in out
    assert "path: " + str((shared / "real/test/archaeology/capital.csv").resolve()) in out
    assert "ZHort: Z values for Depot" in out
    assert "Depots peaked" not in out and "gold: hidden" in out
    code, out, _ = run(capsys, "tasks", "show", "archaeology/12/0", "--data-root", str(shared), "--with-gold")
    assert "gold hypothesis: Around 1100 BCE, the Depots peaked." in out


def test_show_json(capsys):
    code, out, _ = run(capsys, "tasks", "show", "demo_archaeology/0/0", "--json")
    record = json.loads(out)
    assert code == 0 and set(record) == {"task"} and DEMO_GOLD_0 not in out
    assert record["task"]["id"] == "demo_archaeology/0/0"
    code, out, _ = run(capsys, "tasks", "show", "demo_archaeology/0/0", "--json", "--with-gold")
    assert json.loads(out)["gold"]["hypothesis"].startswith(DEMO_GOLD_0)


def test_validate_real_data_warns_on_duplicates_and_exits_zero(capsys, shared):
    code, out, _ = run(capsys, "tasks", "validate", "--data-root", str(shared))
    lines = out.splitlines()
    assert code == 0
    assert ("warning: task archaeology/26/0 asks the same question as archaeology/2/0 "
            "(metadata_26.json and metadata_2.json)") in lines
    assert lines[-1] == f"38 tasks in {shared.resolve()}: 0 errors, 2 warnings"


def test_validate_exits_nonzero_on_errors(capsys, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(demo_root(), root)
    csv_path = root / "real" / "test" / "demo_archaeology" / "hoard_finds.csv"
    csv_path.unlink()
    code, out, _ = run(capsys, "tasks", "validate", "--data-root", str(root))
    assert code == 1
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3 and all(str(csv_path.resolve()) in line for line in errors)
    assert out.splitlines()[-1].endswith(": 3 errors, 0 warnings")


@pytest.mark.parametrize("argv, expected", [
    (("tasks", "list", "--data-root", "/no/such/folder"), "colabkit: error: data root not found: /no/such/folder"),
    (("tasks", "show", "demo_archaeology/7/0"), "colabkit: error: no task matches id 'demo_archaeology/7/0'"),
    (("tasks", "list", "--split", "synth"), "colabkit: error: no task matches split='synth'"),
])
def test_user_errors_are_one_line_with_exit_2(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(expected) and err.count("\n") == 1


def test_missing_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["tasks"])
    assert info.value.code == 2


def test_demo_validates_and_lists(capsys):
    code, out, _ = run(capsys, "demo", "--dry-run")
    assert code == 0
    assert f"validated 4 tasks in {demo_root()}: 0 errors, 0 warnings" in out
    assert "demo_archaeology/3/0  [variables]" in out
    assert DEMO_GOLD_0 not in out


def test_demo_stops_on_invalid_data(capsys, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(demo_root(), root)
    (root / "real" / "test" / "demo_archaeology" / "metadata_0.json").write_text("[]", encoding="utf-8")
    code, out, _ = run(capsys, "demo", "--data-root", str(root))
    assert code == 1 and "field (top level) must be a JSON object" in out and "demo stopped" in out


def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "colabkit", "tasks", "list"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("demo_archaeology/0/0")


def test_list_shows_the_good_tasks_and_reports_the_broken_one(capsys, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(demo_root(), root)
    broken = root / "real" / "test" / "demo_archaeology" / "metadata_2.json"
    broken.write_text("{", encoding="utf-8")
    code, out, err = run(capsys, "tasks", "list", "--data-root", str(root))
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        "demo_archaeology/0/0", "demo_archaeology/1/0", "demo_archaeology/3/0"]
    assert err.splitlines() == [
        f"error: malformed metadata {broken}: invalid JSON at line 1 column 2: "
        "Expecting property name enclosed in double quotes",
        f"3 tasks in {root}; tasks of 1 error(s) above were left out"]
    code, out, err = run(capsys, "tasks", "show", "demo_archaeology/2/0", "--data-root", str(root))
    assert code == 2 and out == "" and err.startswith(f"colabkit: error: malformed metadata {broken}: ")
    code, out, _ = run(capsys, "tasks", "show", "demo_archaeology/3/0", "--data-root", str(root))
    assert code == 0 and "id: demo_archaeology/3/0" in out


def test_validate_fails_on_a_csv_of_binary_garbage(capsys, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(demo_root(), root)
    garbage = root / "real" / "test" / "demo_archaeology" / "hoard_finds.csv"
    garbage.write_bytes(bytes(range(256)) * 16)
    code, out, _ = run(capsys, "tasks", "validate", "--data-root", str(root))
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 1 and errors and all(line.endswith(f"(binary content): {garbage.resolve()}") for line in errors)
