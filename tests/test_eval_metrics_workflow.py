"""C_wf: the shipped reference graphs, their validation, and coverage computed by hand."""

import json

import pytest
from helpers.env import shared_data

from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics.process import successful_cells
from colabkit.evaluation.metrics.workflow import (
    WORKFLOW_PROMPT,
    NodeVerdict,
    coverage,
    load_workflows,
    parse_workflow,
    rule_hits,
    workflow_fields,
    workflow_for,
)
from tests.helpers.trajectories import Trajectory


def test_shipped_graphs_are_valid_and_cover_the_four_families():
    graphs = {g.family: g for g in load_workflows()}
    assert set(graphs) == {"time_series", "pollen_growth", "capital_pca", "capital_correlation"}
    assert graphs["pollen_growth"].tag_set == graphs["time_series"].tag_set | {"pollen modelling"}
    for g in graphs.values():
        assert any(n.check == "rule:reads_data" for n in g.nodes)


def test_every_real_archaeology_task_matches_a_family_as_the_notes_count():
    archaeology = shared_data() / "real" / "test" / "archaeology"
    counts: dict[str | None, int] = {}
    for path in sorted(archaeology.glob("metadata_*.json")):
        tags = json.loads(path.read_text())["workflow_tags"].split(",")
        graph = workflow_for(tags)
        counts[graph.family if graph else None] = counts.get(graph.family if graph else None, 0) + 1
    assert counts == {"time_series": 21, "pollen_growth": 6, "capital_pca": 8, "capital_correlation": 3}


def test_unmatched_tags_give_no_family():
    assert workflow_for(["time series analysis", "data cleaning", "data visualization", "correlation analysis"]) is None
    assert workflow_for([" Data Visualization", "time series analysis", "DATA CLEANING "]).family == "time_series"


GOOD = {"schema_version": 1, "family": "f", "version": 1, "title": "t", "tags": ["a"],
        "nodes": [{"id": "load", "check": "rule:reads_data", "after": [], "description": "load the files"},
                  {"id": "fit", "check": "judged", "after": ["load"], "description": "fit the model"}]}


@pytest.mark.parametrize("change, message", [
    ({"nodes": [{**GOOD["nodes"][0], "after": ["fit"]}, GOOD["nodes"][1]]}, "cycle"),
    ({"nodes": [GOOD["nodes"][0], {**GOOD["nodes"][1], "after": ["nope"]}]}, "unknown node"),
    ({"nodes": [GOOD["nodes"][0], GOOD["nodes"][0]]}, "repeat"),
    ({"nodes": [{**GOOD["nodes"][0], "check": "rule:magic"}]}, "check"),
    ({"schema_version": 7}, "schema_version"),
    ({"tags": ["a", "A "]}, "distinct"),
])
def test_invalid_graph_files_are_refused_with_their_name(change, message):
    parse_workflow(json.dumps(GOOD), "x.json")
    with pytest.raises(ColabkitError, match=rf"^bad\.json: invalid workflow graph: .*{message}"):
        parse_workflow(json.dumps({**GOOD, **change}), "bad.json")
    with pytest.raises(ColabkitError, match="bad.json"):
        parse_workflow("{not json", "bad.json")


def cells():
    t = Trajectory()
    t.run("D", "import pandas as pd\ndf = pd.read_csv('data/capital.csv', decimal=',')", "loaded")   # cell 0
    t.run("ai", "import matplotlib.pyplot as plt\nplt.plot(df.BCE, df.ZBeil)", "", status="error")    # cell 1
    t.run("ai", "s = df.set_index('BCE')['ZBeil']\ns.plot()", "", images=1)                        # cell 2
    return t.snapshot()


def test_hand_computed_coverage():
    snap = cells()
    ok = successful_cells(snap)  # the scorer's own filter: the failed cell 1 must not be evidence
    assert [c.index for c in ok] == [0, 2]
    graph = workflow_for(["time series analysis", "data cleaning", "data visualization"])
    rules = rule_hits(graph, ok, ["/x/capital.csv", "/x/time_series_data.csv"])
    assert rules == {"load": 0, "plot": 2}  # the failed plot in cell 1 is not evidence
    yes = lambda cell: NodeVerdict(reason="r", implemented=True, cell=cell)  # noqa: E731
    no = NodeVerdict(reason="r", implemented=False, cell=None)
    verdicts = {"clean": yes(0), "map_terms": yes(2), "bin_window": no, "series": yes(2), "locate_event": no}
    result = coverage(graph, rules, verdicts, ok)
    # implemented: load (rule, cell 0), clean (0), map_terms (2), series (2), plot (rule, cell 2) = 5
    # of 7 nodes (bin_window and locate_event not implemented): C_wf = 5/7 = 0.714286
    assert result.c_wf == pytest.approx(5 / 7)
    assert result.matched == {"load": 0, "clean": 0, "map_terms": 2, "bin_window": None, "series": 2,
                              "locate_event": None, "plot": 2}


def test_judge_failures_leave_coverage_missing_never_a_number():
    ok = successful_cells(cells())
    graph = workflow_for(["time series analysis", "data cleaning", "data visualization"])
    rules = rule_hits(graph, ok, ["capital.csv"])
    yes = NodeVerdict(reason="r", implemented=True, cell=0)
    full = dict.fromkeys(["clean", "map_terms", "bin_window", "series", "locate_event"], yes)
    assert coverage(graph, rules, full, ok).c_wf == 1.0
    result = coverage(graph, rules, {**full, "series": None}, ok)
    assert result.c_wf is None and result.flags == ("c_wf:judge_missing(1)",)
    # naming the failed cell 1 (or a cell that does not exist) is garbage, not evidence
    result = coverage(graph, rules, {**full, "series": NodeVerdict(reason="r", implemented=True, cell=1)}, ok)
    assert result.c_wf is None and result.flags == ("c_wf:judge_named_no_successful_cell(1)",)


def test_no_family_and_no_successful_cell():
    result = coverage(None, {}, {}, [])
    assert result.c_wf is None and result.flags == ("c_wf:no_workflow_family",)
    graph = load_workflows()[0]
    assert coverage(graph, {}, {}, []).c_wf == 0.0


def test_judge_fields_show_only_successful_cells_given():
    ok = successful_cells(cells())
    graph = workflow_for(["time series analysis", "data cleaning", "data visualization"])
    fields = workflow_fields("In which century did axes peak?", graph.nodes[1], ok)
    assert len(fields["cells"]) == 2 and fields["cells"][0].startswith("[cell 0 by D]")
    assert WORKFLOW_PROMPT.id == "workflow_node"


def test_the_graph_files_content_is_part_of_the_c_wf_scorer_id(tmp_path, monkeypatch):
    from colabkit.evaluation import scorer_id, scorers_for
    from colabkit.evaluation.metrics import workflow as workflow_module
    from colabkit.llm import ModelConfig

    judge = ModelConfig(model="judgedouble/x")
    c_wf, performance = scorers_for(["c_wf", "performance"])
    shipped = scorer_id(c_wf, judge, 1)
    copies = []
    for graph in workflow_module._graph_files():
        copy = tmp_path / graph.name
        copy.write_text(graph.read_text(encoding="utf-8"), encoding="utf-8")
        copies.append(copy)
    monkeypatch.setattr(workflow_module, "_graph_files", lambda: copies)
    workflow_module.graphs_hash.cache_clear()
    try:
        assert scorer_id(c_wf, judge, 1) == shipped  # same bytes, same id
        data = json.loads(copies[0].read_text())
        copies[0].write_text(json.dumps({**data, "version": data["version"] + 1}), encoding="utf-8")
        workflow_module.graphs_hash.cache_clear()
        assert scorer_id(c_wf, judge, 1) != shipped  # a changed graph scores anew
        assert performance.data_identity is None  # scorers that read no data keep their ids
    finally:
        workflow_module.graphs_hash.cache_clear()
