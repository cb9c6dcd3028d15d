"""The tasks layer on real DiscoveryBench files, the synth fixture and hand-broken copies."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from helpers.env import discoverybench_root, require, shared_data
from pydantic import ValidationError

from colabkit.errors import ColabkitError
from colabkit.tasks import Task, demo_root, load_tasks, read_table, validate_tasks
from colabkit.tasks.table import read_table_reported, sniff_delimiter

SHARED = discoverybench_root()
SYNTH = Path(__file__).resolve().parent / "fixtures" / "synth"
ARCH = SHARED / "real" / "test" / "archaeology"


@pytest.fixture
def shared() -> Path:
    return shared_data()


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A writable copy of the demo data root, to break on purpose."""
    root = tmp_path / "data"
    shutil.copytree(demo_root(), root)
    return root


def _meta(root: Path, k: int) -> Path:
    return root / "real" / "test" / "demo_archaeology" / f"metadata_{k}.json"


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


# ---- the 38 real archaeology tasks -------------------------------------------------------

def test_all_38_archaeology_tasks_load_with_gold(shared):
    suite = load_tasks(shared)
    assert len(suite.tasks) == 38
    assert suite.ids == tuple(f"archaeology/{k}/0" for k in range(38))
    assert set(suite.gold) == set(suite.ids)
    assert suite.gold_for("archaeology/0/0").hypothesis == (
        "At the end of the 4th millennium BCE, axes become quantitatively most frequent.")
    assert suite.gold_for("archaeology/12/0").hypothesis == "Around 1100 BCE, the Depots peaked."
    assert suite.root == SHARED.resolve()


def test_task_fields_follow_the_metadata(shared):
    suite = load_tasks(shared)
    task = suite.get("archaeology/0/0")
    assert (task.split, task.domain, task.question_type) == ("real/test", "humanities", "context")
    assert task.query == "In which century did the axes become quantitatively most frequent?"
    assert task.workflow_tags == ("time series analysis", "data cleaning", "data visualization")
    assert task.domain_knowledge.startswith("1. Symbolic capital consists of")
    assert [d.name for d in task.datasets] == [
        "pollen_openness_score_Belau_Woserin_Feeser_et_al_2019.csv", "time_series_data.csv", "capital.csv"]
    for dataset in task.datasets:
        assert dataset.path.is_absolute() and dataset.path.is_file()
        assert dataset.path.parent == ARCH.resolve()
    capital = task.datasets[2]
    assert capital.columns[3].name == "ZAxtSchwert"
    assert capital.columns[3].description == "Z values for Hatchets and Swords"
    assert [d.name for d in suite.get("archaeology/12/0").datasets] == ["time_series_data.csv", "capital.csv"]
    types = [t.question_type for t in suite.tasks]
    assert (types.count("context"), types.count("relationship")) == (25, 13)


def test_participant_view_of_every_task_has_no_gold_text(shared):
    suite = load_tasks(shared)
    golds = [g.hypothesis for g in suite.gold.values()]
    assert len(golds) == 38
    for task in suite.tasks:
        text = task.model_dump_json()
        for gold in golds:
            assert gold not in text and json.dumps(gold)[1:-1] not in text, task.id


def test_task_type_cannot_carry_gold(shared):
    task = load_tasks(shared, ids=["archaeology/0/0"]).tasks[0]
    assert not any("gold" in f or "hypo" in f for f in Task.model_fields)
    with pytest.raises(ValidationError):
        Task(**task.model_dump(), gold="anything")
    suite = load_tasks(shared)
    assert not any(g.hypothesis in repr(suite) for g in suite.gold.values())


def test_filters_by_split_domain_and_ids(shared):
    for split in ("real/test", "real", "test"):
        assert len(load_tasks(shared, split=split).tasks) == 38
    for domain in ("archaeology", "Humanities"):
        assert len(load_tasks(shared, domains=[domain]).tasks) == 38
    picked = load_tasks(shared, ids=["archaeology/5/0", "archaeology/30"])
    assert picked.ids == ("archaeology/5/0", "archaeology/30/0")
    assert set(picked.gold) == set(picked.ids)
    scoped = load_tasks(ARCH, ids=["archaeology/7/0"])
    assert scoped.root == SHARED.resolve() and scoped.gold_for("archaeology/7/0") is not None


def test_validate_flags_archaeology_duplicates_as_warnings(shared):
    report = validate_tasks(shared)
    assert report.ok and report.task_count == 38
    lines = [p.line() for p in report.problems]
    assert ("warning: task archaeology/26/0 asks the same question as archaeology/2/0 "
            "(metadata_26.json and metadata_2.json)") in lines
    assert any(line.startswith("warning: task archaeology/12/0 has the same gold answer as archaeology/3/0")
               for line in lines)
    assert len(lines) == 2


# ---- read_table ----------------------------------------------------------------------------

def test_read_table_parses_decimal_commas_in_capital(shared):
    frame = read_table(ARCH / "capital.csv")
    assert frame.loc[0, "ZAxtSchwert"] == pytest.approx(-0.44)
    assert frame.loc[0, "ZMW"] == pytest.approx(-3.13448793268026)
    z_columns = [c for c in frame.columns if c.startswith("Z")]
    assert len(z_columns) == 12
    assert all(frame[c].dtype == "float64" for c in z_columns)
    assert frame["BCE"].dtype == "int64" and frame.loc[0, "BCE"] == 4300
    assert frame.loc[0, "group"] == "EN"  # text columns stay text
    assert len(frame) == 39


def test_read_table_turns_the_saved_index_into_the_index(shared):
    series = read_table(ARCH / "time_series_data.csv")
    assert list(series.columns[:2]) == ["CE", "calBP"] and len(series.columns) == 36
    assert not any(str(c).startswith("Unnamed") for c in series.columns)
    assert series.index[0] == 0 and series.loc[0, "CE"] == -4100
    pollen = read_table(ARCH / "pollen_openness_score_Belau_Woserin_Feeser_et_al_2019.csv")
    assert pollen["Woserin_PC1"].dtype == "float64" and pollen["SMOOTH_MEAN_250y"].dtype == "float64"
    assert pollen.iloc[0]["Woserin_PC1"] == pytest.approx(5.65433790538302)
    assert (pollen.index == pollen["CE"]).all()


def test_read_table_converts_only_decimal_comma_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('name,author,grouped,dec,dots\n'
                    'a,"Smith, J.","1,234","-0,5",1.5\n'
                    'b,"Lee, K.","12,500",0,2.25\n'
                    'c,"Ng, A.","3,000","1,25",\n', encoding="utf-8")
    frame = read_table(path)
    assert frame["dec"].tolist() == [-0.5, 0.0, 1.25]
    assert frame["author"].tolist() == ["Smith, J.", "Lee, K.", "Ng, A."]
    assert frame["grouped"].tolist() == ["1,234", "12,500", "3,000"]  # ambiguous: left as text
    assert frame["dots"].dtype == "float64"


def test_read_table_other_formats_and_errors(tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1\t\"2,5\"\n", encoding="utf-8")
    assert read_table(tsv).loc[0, "b"] == 2.5
    legacy = tmp_path / "legacy.csv"
    legacy.write_bytes("site,temp\nCaf\xe9,\"1,5\"\n".encode("cp1252"))
    frame = read_table(legacy)
    assert frame.loc[0, "site"] == "Caf\xe9" and frame.loc[0, "temp"] == 1.5
    with pytest.raises(ColabkitError, match="data file not found: .*nope.csv"):
        read_table(tmp_path / "nope.csv")
    (tmp_path / "tree.txt").write_text("(a,b);", encoding="utf-8")
    with pytest.raises(ColabkitError, match=r"not a table .*tree\.txt"):
        read_table(tmp_path / "tree.txt")


# ---- synth schema and the upstream-clone layout ----------------------------------------------

def test_synth_fixture_is_really_cp1252():
    raw = (SYNTH / "discoverybench/synth/test/tiny-pottery_0_0/metadata_0.json").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")


def test_synth_schema_loads_from_an_upstream_clone_layout():
    suite = load_tasks(SYNTH)
    assert suite.root == (SYNTH / "discoverybench").resolve()
    assert suite.ids == ("tiny-pottery_0_0/0/17", "tiny-pottery_1_0/0/3", "tiny-pottery_1_0/0/4")
    test_task = suite.get("tiny-pottery_0_0/0/17")
    assert (test_task.split, test_task.domain, test_task.question_type) == ("synth/test", "tiny pottery", "general")
    assert test_task.datasets[0].description == "Synthetic kiln records from a caf\xe9-sized workshop."
    assert [c.name for c in test_task.datasets[0].columns] == ["kiln_temperature", "sherd_count", "glaze"]
    assert test_task.datasets[0].columns[0].description.endswith("\xb0C")
    assert test_task.domain_knowledge == "" and test_task.workflow_tags == ()
    assert suite.gold_for("tiny-pottery_0_0/0/17").hypothesis.startswith("Sherd count increases")
    assert suite.gold_for("tiny-pottery_1_0/0/4").hypothesis == "Celadon glaze dominates firings above 1200 degrees."
    for task in suite.tasks:  # no gold, and no gold-adjacent synth fields, in the task
        text = task.model_dump_json()
        assert "true_hypothesis" not in text and "target_col" not in text and "0.1" not in text
        assert suite.gold_for(task.id).hypothesis not in text
    assert load_tasks(SYNTH / "discoverybench", split="synth/train").ids == (
        "tiny-pottery_1_0/0/3", "tiny-pottery_1_0/0/4")
    assert load_tasks(SYNTH / "discoverybench" / "synth" / "train").ids == suite.ids[1:]
    assert len(load_tasks(SYNTH, domains=["tiny-pottery"]).tasks) == 3
    assert validate_tasks(SYNTH).problems == ()


def test_demo_loads_from_an_upstream_clone_layout(tmp_path):
    shutil.copytree(demo_root() / "real", tmp_path / "repo" / "discoverybench" / "real")
    shutil.copytree(demo_root() / "eval", tmp_path / "repo" / "eval")
    for root in (tmp_path / "repo", tmp_path / "repo" / "discoverybench"):
        suite = load_tasks(root)
        assert len(suite.tasks) == 4 and len(suite.gold) == 4


# ---- one-line errors naming the path or value --------------------------------------------------

def _error(**kwargs) -> str:
    with pytest.raises(ColabkitError) as info:
        load_tasks(**kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def _broken(root: Path, prefix: str) -> str:
    """The one-line problem of the task(s) under `prefix`, checked the way a user meets it: the
    rest of the root loads with the problem reported, `get` and an explicit id raise it."""
    suite = load_tasks(root)
    assert suite.ids and not any(t.id == prefix or t.id.startswith(prefix + "/") for t in suite.tasks)
    assert len(suite.errors) == 1 and set(suite.gold) == set(suite.ids)
    message = suite.errors[0].message
    assert "\n" not in message
    assert _error(root=root, ids=[prefix]) == message
    with pytest.raises(ColabkitError) as info:
        suite.get(prefix if prefix.count("/") == 2 else prefix + "/0")
    assert str(info.value) == message
    return message


def test_error_root_not_found_and_not_a_data_root(tmp_path):
    assert _error(root=tmp_path / "missing").startswith(f"data root not found: {tmp_path / 'missing'}")
    assert _error(root=tmp_path).startswith(f"not a DiscoveryBench folder: {tmp_path.resolve()}")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert _error(root=tmp_path / "notes.txt").startswith("data root is not a folder: ")


def test_error_no_task_matches(demo_copy):
    assert _error(root=demo_copy, split="synth").startswith("no task matches split='synth' in ")
    assert "domains=['botany']" in _error(root=demo_copy, domains=["botany"])
    message = _error(root=demo_copy, ids=["demo_archaeology/9/0"])
    assert message.startswith("no task matches id 'demo_archaeology/9/0'") and "near: demo_archaeology/" in message
    with pytest.raises(ColabkitError, match="unknown task id 'demo/0/0'"):
        load_tasks(demo_copy).get("demo/0/0")


def test_error_malformed_metadata_names_file_and_field(demo_copy):
    path = _meta(demo_copy, 1)
    _edit(path, lambda d: d["datasets"][0]["columns"]["raw"][1].pop("name"))
    message = _broken(demo_copy, "demo_archaeology/1")
    assert message == f"malformed metadata {path}: field datasets[0].columns.raw[1].name is missing or empty"
    shutil.copy(_meta(demo_root(), 1), path)
    _edit(path, lambda d: d.update(queries="what?"))
    assert "field queries must be a non-empty list" in _broken(demo_copy, "demo_archaeology/1")
    path.write_text('{"id": 0, "datasets": [', encoding="utf-8")
    assert _broken(demo_copy, "demo_archaeology/1").startswith(f"malformed metadata {path}: invalid JSON at line 1")
    # a request that excludes the broken file does not even report it
    assert load_tasks(demo_copy, ids=["demo_archaeology/0"]).problems == ()


@pytest.mark.parametrize("change, field", [
    (lambda d: d["queries"][0][0].update(qid="\u00b2"), "queries[0][0].qid"),
    (lambda d: d["queries"][0][0].update(qid="9" * 5000), "queries[0][0].qid"),
    (lambda d: d["datasets"][0].update(name="a\u0000b.csv"), "datasets[0].name"),
])
def test_error_odd_values_are_one_line_metadata_errors(demo_copy, change, field):
    path = _meta(demo_copy, 0)
    _edit(path, change)
    assert _broken(demo_copy, "demo_archaeology/0").startswith(f"malformed metadata {path}: field {field} ")


def test_error_deeply_nested_metadata_is_a_metadata_error(demo_copy):
    path = _meta(demo_copy, 0)
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert _broken(demo_copy, "demo_archaeology/0") == f"malformed metadata {path}: JSON nested too deeply"


def test_error_dataset_name_outside_the_task_folder(demo_copy):
    _edit(_meta(demo_copy, 0), lambda d: d["datasets"][0].update(name="../../../eval/answer_key_real.csv"))
    assert "field datasets[0].name must name a file inside" in _broken(demo_copy, "demo_archaeology/0")


def test_error_listed_csv_missing(demo_copy):
    missing = demo_copy / "real" / "test" / "demo_archaeology" / "settlement_proxies.csv"
    missing.unlink()
    message = _error(root=demo_copy, ids=["demo_archaeology/1/0"])
    assert message == f"dataset file listed in {_meta(demo_copy, 1).resolve()} is missing: {missing.resolve()}"


def test_error_malformed_answer_key(demo_copy):
    (demo_copy / "eval" / "answer_key_real.csv").write_text("dataset,metadataid,gold\nx,1,y\n", encoding="utf-8")
    assert _error(root=demo_copy).endswith("missing column(s) query_id, gold_hypo")


def test_error_duplicate_task_id_across_splits(demo_copy):
    train = demo_copy / "real" / "train" / "demo_archaeology"
    train.mkdir(parents=True)
    shutil.copy(_meta(demo_copy, 0), train / "metadata_0.json")
    shutil.copy(demo_copy / "real" / "test" / "demo_archaeology" / "hoard_finds.csv", train)
    assert _broken(demo_copy, "demo_archaeology/0/0").startswith("task id demo_archaeology/0/0 is defined twice: in ")
    assert len(load_tasks(demo_copy, split="real/test", ids=["demo_archaeology/1/0"]).tasks) == 1


def test_query_without_qid_uses_its_position(demo_copy):
    def two_queries(doc):
        doc["queries"] = [[{"question": "First?"}, {"question": "Second?", "question_type": "context"}]]
    _edit(_meta(demo_copy, 2), two_queries)
    suite = load_tasks(demo_copy, ids=["demo_archaeology/2"])
    assert suite.ids == ("demo_archaeology/2/0", "demo_archaeology/2/1")
    assert suite.get("demo_archaeology/2/1").query == "Second?"
    assert suite.gold_for("demo_archaeology/2/1") is None


def test_validate_reports_each_problem_as_an_error(demo_copy):
    folder = demo_copy / "real" / "test" / "demo_archaeology"
    (folder / "pollen_openness.csv").unlink()
    _meta(demo_copy, 3).write_text("{", encoding="utf-8")
    key = demo_copy / "eval" / "answer_key_real.csv"
    key.write_text("\n".join(key.read_text(encoding="utf-8").splitlines()[:-2]) + "\n", encoding="utf-8")
    report = validate_tasks(demo_copy)
    kinds = sorted(p.kind for p in report.errors)
    assert kinds == ["bad-metadata", "missing-file", "missing-file", "missing-file", "missing-gold"]
    assert not report.ok and report.warnings == ()
    assert any(p.line().startswith("error: no gold answer for task demo_archaeology/2/0: not in ")
               for p in report.problems)


# ---- odd files: a tree that is not a table, tab-separated .csv, Stata, binary garbage ----------

ODD = Path(__file__).resolve().parent / "fixtures" / "odd"
PLANTS = ODD / "real" / "test" / "plant_invasions"


@pytest.fixture
def odd_copy(tmp_path: Path) -> Path:
    root = tmp_path / "odd"
    shutil.copytree(ODD, root)
    return root


def test_tree_with_an_empty_column_name_loads_as_a_file_with_a_warning():
    suite = load_tasks(ODD)
    assert suite.ids == ("plant_invasions/0/0", "plant_invasions/1/0") and suite.errors == ()
    tree = suite.get("plant_invasions/0/0").datasets[1]
    assert (tree.name, tree.kind, tree.columns) == ("phylogenetic_tree.txt", "file", ())
    assert tree.description == ("Phylogeny of the non-native species. "
                                "Newick string with branch lengths in million years.")
    assert [d.kind for d in suite.get("plant_invasions/0/0").datasets] == ["table", "file"]
    assert suite.get("plant_invasions/1/0").datasets[0].kind == "table"  # .dta
    (warning,) = suite.problems
    assert warning.line() == (
        f"warning: metadata {PLANTS / 'metadata_0.json'}: field datasets[1].columns.raw[0].name is "
        "empty; phylogenetic_tree.txt is not a table, so the entry is read as a description of the file")
    report = validate_tasks(ODD)
    assert report.ok and [p.kind for p in report.problems] == ["odd-metadata"]


def test_empty_column_name_of_a_table_is_still_an_error(odd_copy):
    _edit(odd_copy / "real/test/plant_invasions/metadata_0.json",
          lambda d: d["datasets"][0]["columns"]["raw"][1].update(name=""))
    suite = load_tasks(odd_copy)
    assert suite.ids == ("plant_invasions/1/0",)
    assert suite.errors[0].message.endswith("field datasets[0].columns.raw[1].name is missing or empty")


def test_read_table_sniffs_a_tab_separated_csv_with_quoted_headers():
    frame = read_table(PLANTS / "invasion_success.csv")
    assert list(frame.columns) == ["species", "intro.pathway", "invaded.plots", "niche.breadth", "mrt"]
    assert frame.loc[2, "species"] == "Bidens gamma" and frame["mrt"].dtype == "int64"
    assert frame["niche.breadth"].tolist() == [0.86, 0.12, 1.30, 0.79, 0.09, 0.0]  # decimal commas kept
    assert frame.attrs["reading"] == ("invasion_success.csv: tab-separated utf-8, 6 rows x 5 columns; "
                                      "decimal commas read in niche.breadth")


def test_read_table_sniffs_semicolons_and_ignores_the_extension(tmp_path):
    semi = tmp_path / "europe.csv"
    semi.write_text("site;temp;note\nA;1,5;x, y\nB;-0,25;z\n", encoding="utf-8")
    frame, reading = read_table_reported(semi)
    assert frame["temp"].tolist() == [1.5, -0.25] and frame.loc[0, "note"] == "x, y"
    assert (reading.delimiter, reading.decimal_comma_columns) == (";", ("temp",))
    comma_in_tsv = tmp_path / "really_comma.tsv"
    comma_in_tsv.write_text("a,b\n1,2\n", encoding="utf-8")
    assert list(read_table(comma_in_tsv).columns) == ["a", "b"]
    single = tmp_path / "one.csv"
    single.write_text("value\n1\n2\n", encoding="utf-8")
    assert read_table_reported(single)[1].delimiter == ","  # nothing to sniff: the extension decides
    assert sniff_delimiter('"a"\t"b, c"\n1\t2\n') == "\t"


def test_read_table_reads_stata():
    frame, reading = read_table_reported(PLANTS / "plot_survey.dta")
    assert list(frame.columns) == ["plot", "habitat", "n_alien", "elevation"]
    assert frame.loc[2, "habitat"] == "urban" and frame.loc[3, "elevation"] == pytest.approx(410.8)
    assert reading.line() == "plot_survey.dta: Stata file, 4 rows x 4 columns"


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(11).randbytes(4096))


def test_read_table_refuses_binary_garbage(tmp_path):
    _garbage(tmp_path / "garbage.csv")
    with pytest.raises(ColabkitError, match=r"^not a text table \(binary content\): .*garbage\.csv$"):
        read_table(tmp_path / "garbage.csv")
    _garbage(tmp_path / "garbage.dta")
    with pytest.raises(ColabkitError, match=r"^cannot parse Stata file .*garbage\.dta"):
        read_table(tmp_path / "garbage.dta")


def test_validate_reads_every_data_file_as_the_suite_would(odd_copy):
    folder = odd_copy / "real" / "test" / "plant_invasions"
    _garbage(folder / "invasion_success.csv")
    _garbage(folder / "plot_survey.dta")
    assert len(load_tasks(odd_copy).tasks) == 2  # loading reads metadata only
    report = validate_tasks(odd_copy)
    errors = sorted(p.line() for p in report.errors)
    assert len(errors) == 2 and errors[0] == (
        f"error: data file listed in {folder / 'metadata_0.json'} cannot be read as a table: "
        f"not a text table (binary content): {(folder / 'invasion_success.csv').resolve()}")
    assert errors[1].startswith(
        f"error: data file listed in {folder / 'metadata_1.json'} cannot be read as a table: "
        f"cannot parse Stata file {(folder / 'plot_survey.dta').resolve()}: ")
    assert not report.ok and "\n" not in errors[1]


def test_validate_warns_on_described_columns_missing_from_the_file(odd_copy):
    _edit(odd_copy / "real/test/plant_invasions/metadata_1.json",
          lambda d: d["datasets"][0]["columns"]["raw"].append({"name": "soil_ph", "description": "pH"}))
    report = validate_tasks(odd_copy)
    assert report.ok
    (mismatch,) = [p for p in report.problems if p.kind == "column-mismatch"]
    assert mismatch.line().startswith("warning: 1 column(s) described in ")
    assert mismatch.line().endswith("plot_survey.dta: soil_ph")


def test_one_broken_task_among_good_ones_leaves_the_good_ones_loadable(tmp_path):
    root = tmp_path / "mixed"
    shutil.copytree(demo_root(), root)
    shutil.copytree(PLANTS, root / "real" / "test" / "plant_invasions")
    with (root / "eval" / "answer_key_real.csv").open("a", encoding="utf-8") as key:
        key.write("".join((ODD / "eval" / "answer_key_real.csv").read_text(encoding="utf-8").splitlines(True)[1:]))
    broken = root / "real" / "test" / "plant_invasions" / "phylogenetic_tree.txt"
    broken.unlink()
    suite = load_tasks(root)
    good = ("demo_archaeology/0/0", "demo_archaeology/1/0", "demo_archaeology/2/0", "demo_archaeology/3/0",
            "plant_invasions/1/0")
    assert suite.ids == good and set(suite.gold) == set(good)
    assert [p.line() for p in suite.errors] == [
        f"error: dataset file listed in {(broken.parent / 'metadata_0.json').resolve()} is missing: "
        f"{broken.resolve()}"]
    for task_id in good:
        assert load_tasks(root, ids=[task_id]).get(task_id).id == task_id
    with pytest.raises(ColabkitError, match="^dataset file listed in .*metadata_0.json is missing: .*tree.txt$"):
        suite.get("plant_invasions/0/0")
    assert load_tasks(root, domains=["biology"]).ids == ("plant_invasions/1/0",)
    assert load_tasks(root, domains=["demo_archaeology"]).problems == ()
    (root / "real/test/plant_invasions/metadata_1.json").write_text("{", encoding="utf-8")
    both = load_tasks(root)
    assert both.ids == good[:4] and len(both.errors) == 2
    message = _error(root=root, domains=["plant_invasions"])  # nothing left to return: say why
    assert message.startswith("dataset file listed in ") and message.endswith("(and 1 more problems)")


def test_a_missing_requirement_fails_in_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required in CI"):
        require(False, "bubblewrap not installed")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        require(False, "bubblewrap not installed")
    require(True, "present")  # no effect
