"""Pooling on a scripted session whose truth is known by construction.

D holds a data note that it says in chat (round 1); R holds a domain point that the frozen memory
carries (build phase) and the submitted hypothesis uses, and another that nobody ever states.
Both deciders must find the first in chat, the second in the memory, the third nowhere; a judge
that fails leaves the values missing and flagged, never a positive.
"""

import asyncio
from pathlib import Path

import pytest

from colabkit.evaluation.builtin import scorers_for
from colabkit.evaluation.judge import Judge, judge_config
from colabkit.evaluation.metrics.pooling import columns, item_fates
from colabkit.evaluation.metrics.private_items import (
    PrivateItem,
    lexically_conveys,
    shared_record,
    split_briefing,
    tokens,
)
from colabkit.evaluation.scorer import SessionContext
from colabkit.llm import Gateway, RetryPolicy
from colabkit.session.events import SYSTEM
from colabkit.store import SessionRecord, atomic_write_text
from colabkit.tasks import load_tasks
from colabkit.team import MemoryRecord
from colabkit.team.briefing import HEADING
from tests.helpers.judges import use_judge_double
from tests.helpers.stored import store_session
from tests.helpers.trajectories import Trajectory

PUBLIC = "Query: Which region grew fastest?\nFiles: data/sales.csv\n"
BRIEFINGS = {
    "D": PUBLIC + HEADING + "\nData notes:\ndata/sales.csv (3 columns): Quarterly revenue of shops, in thousands "
    "of euros.\n Quirks: semicolon-separated: read with sep=';'; some cells are empty.\n Columns: region: sales "
    "territory code (N, S, E, W); rev_k: revenue in thousand euros; shop_id",
    "R": PUBLIC + HEADING + "\nDomain knowledge: 1. The northern territory was merged with the eastern one in 2019. "
    "2. Holiday quarters inflate revenue by about thirty percent.",
}
IN_CHAT, IN_MEMORY, NEVER = "D/data/sales.csv/quirk/1", "R/domain/2", "R/domain/1"
CHAT = "Careful: the sales file is semicolon-separated, so read it with sep=';'."
MEMORY_PLAN = "Remember that holiday quarters inflate revenue by thirty percent."
HYPOTHESIS = "After removing the thirty percent holiday inflation of revenue, the south grew fastest."
CELL = "df = pd.read_csv('data/sales.csv', sep=';')"


def session() -> Trajectory:
    t = Trajectory(("ai", "D", "R"))
    t.round = 0
    t.start()
    t.round = 4
    memory = MemoryRecord(expertise="D knows the file, R the market", responsibility="R checks",
                          plan=MEMORY_PLAN, evidence_standards="growth per region")
    t._emit(SYSTEM, "memory_frozen", "info", phase="build", args={"memory": memory.model_dump(mode="json")})
    t.round = 1
    t.say("D", CHAT)
    t.run("ai", CELL, "loaded")
    t.next_round()
    t.edit("ai", HYPOTHESIS)
    t.end()
    return t


def context(tmp_path: Path, traj: Trajectory, briefings: dict[str, str] | None = None, *,
            variant_name: str = "memory-dr") -> SessionContext:
    folder = store_session(tmp_path, "demo_archaeology/0/0", traj.hypothesis, variant_name=variant_name)
    record = SessionRecord.model_validate_json((folder / "session.json").read_text())
    record = record.model_copy(update={"briefings": BRIEFINGS if briefings is None else briefings})
    atomic_write_text(folder / "session.json", record.model_dump_json())
    gateway = Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0))
    return SessionContext(folder=folder, record=record, events=tuple(traj.events), snapshot_source=traj.snapshot,
                          task=load_tasks().get("demo_archaeology/0/0"), gold=None,
                          judge=Judge(gateway, judge_config("judgedouble/scripted")))


def score(name: str, ctx: SessionContext, repeats: int = 1):
    scorer = scorers_for([name])[0]
    return scorer.combine([asyncio.run(scorer.score(ctx.for_repeat(k))) for k in range(repeats)])


def truthful(payload):
    """A judge right by construction: the chat conveys the quirk, the memory and the hypothesis
    the holiday point, nothing else conveys anything."""
    content = payload["text"]["content"]
    wanted = {"semicolon-separated: read with sep=';'"} if content == CHAT else \
        {"Holiday quarters inflate revenue by about thirty percent."} \
        if MEMORY_PLAN in content or content == HYPOTHESIS else set()
    return {"reason": "compared", "conveyed": [n["n"] for n in payload["private_notes"] if n["note"] in wanted]}


def fates_by_id(result):
    return {f["item_id"]: f for f in result.details["items"]}


def test_the_briefing_splits_into_stably_named_items_and_the_public_part_is_no_item():
    items = split_briefing("D", BRIEFINGS["D"]) + split_briefing("R", BRIEFINGS["R"])
    assert [i.item_id for i in items] == [
        "D/data/sales.csv/about", IN_CHAT, "D/data/sales.csv/quirk/2", "D/data/sales.csv/column/region",
        "D/data/sales.csv/column/rev_k", NEVER, IN_MEMORY]  # a bare column name (shop_id) is public
    assert items[-1].text == "Holiday quarters inflate revenue by about thirty percent."  # the number is the id
    assert split_briefing("D", PUBLIC) == []  # a briefing without private notes holds no item
    assert not {"region", "grew", "fastest", "sales"} & set().union(*(set(i.tokens) for i in items))
    assert split_briefing("R", BRIEFINGS["R"].replace("thirty", "30"))[1].digest != items[-1].digest


def test_the_shared_record_names_each_texts_channel_in_log_order():
    texts = shared_record(session().events)
    assert [(t.channel, t.phase, t.round) for t in texts] == [
        ("memory", "build", 4), ("chat", "task", 1), ("cell", "task", 1), ("editor", "task", 2)]


def test_the_lexical_bound_errs_toward_not_conveyed():
    item = PrivateItem(item_id="x", holder="R", kind="domain", text="t", digest="d",
                       tokens=tuple(sorted(tokens("holiday quarters inflate revenue thirty percent"))))
    assert lexically_conveys(item, "Holiday quarters inflate revenue by thirty percent")
    assert not lexically_conveys(item, "Sales spike around Christmas by nearly a third")  # a paraphrase is missed
    assert not lexically_conveys(item, "holiday revenue")  # 2 of 6 distinctive tokens is below the share
    short = item.model_copy(update={"tokens": ("holida",)})
    assert not short.decidable and not lexically_conveys(short, "holiday")


@pytest.mark.parametrize("name, prefix", [("pooling_lexical", "pooling_lex"), ("pooling", "pooling")])
def test_chat_memory_and_never_shared_items_are_found_where_they_went(tmp_path, name, prefix):
    use_judge_double({}, fallback=lambda prompt_id, payload: truthful(payload))
    result = score(name, context(tmp_path, session()))
    fates = fates_by_id(result)
    assert (fates[IN_CHAT]["pooled"], fates[IN_CHAT]["channel"], fates[IN_CHAT]["first_by"]) == (True, "chat", "D")
    assert (fates[IN_CHAT]["first_seq"], fates[IN_CHAT]["first_round"], fates[IN_CHAT]["first_phase"]) == (2, 1, "task")
    assert (fates[IN_MEMORY]["pooled"], fates[IN_MEMORY]["channel"], fates[IN_MEMORY]["first_phase"]) == \
        (True, "memory", "build")
    assert fates[NEVER]["pooled"] is False and fates[NEVER]["channel"] is None
    assert [i for i, f in fates.items() if f["in_hypothesis"]] == [IN_MEMORY]
    v = result.values
    assert v[prefix] == pytest.approx(2 / 7) and v[f"{prefix}_hyp"] == pytest.approx(1 / 7)
    assert (v[f"{prefix}_first_chat"], v[f"{prefix}_first_memory"], v[f"{prefix}_first_cell"]) == (1, 1, 0)
    assert v[f"{prefix}_delay"] == pytest.approx(0.5)  # build phase counts as round 0, the chat was round 1
    assert v["private_items"] == 7 and result.flags == []


@pytest.mark.parametrize("bad, transient", [(RuntimeError("judge down"), True), ("not json", False)])
def test_a_judge_that_fails_gives_missing_values_and_a_flag_never_a_positive(tmp_path, bad, transient):
    def answer(prompt_id, payload):  # every text of the record fails; only the hypothesis is judged
        return truthful(payload) if payload["text"]["kind"] == "the submitted hypothesis" else bad

    use_judge_double({}, fallback=answer)
    result = score("pooling", context(tmp_path, session()))
    fates = fates_by_id(result)
    assert all(f["pooled"] is None for f in fates.values())  # unknown, not "not pooled", and never pooled
    assert result.values["pooling"] is None and result.values["pooling_first_chat"] is None
    assert "pooling:judge_missing(7)" in result.flags and any(f.startswith("pooling_conveys: judge_")
                                                             for f in result.flags)
    assert result.values["pooling_hyp"] == pytest.approx(1 / 7)  # the hypothesis itself was judged
    assert result.complete is (not transient)
    pooled = [j for j in result.judgements if j.item.startswith("pooled:")]
    assert len(pooled) == 7 and all(j.label is None and j.flag for j in pooled)


def test_a_judge_naming_a_note_that_does_not_exist_is_not_a_positive(tmp_path):
    use_judge_double({}, fallback=lambda prompt_id, payload: {"reason": "r", "conveyed": [99]})
    result = score("pooling", context(tmp_path, session()))
    assert result.values["pooling"] is None and "pooling:judge_named_no_note(5)" in result.flags


def test_a_later_positive_after_an_unjudged_text_is_pooled_but_its_first_appearance_unknown():
    items = split_briefing("D", BRIEFINGS["D"])
    texts = shared_record(session().events)
    fates = item_fates(items, texts, {texts[0].text_id: None, texts[1].text_id: {IN_CHAT},
                                      texts[2].text_id: set(), texts[3].text_id: set()}, set())
    quirk = next(f for f in fates if f.item_id == IN_CHAT)
    assert quirk.pooled is True and quirk.channel is None and quirk.first_seq is None
    assert all(f.pooled is None for f in fates if f.item_id != IN_CHAT)


def test_repeats_measure_the_judges_agreement_per_item(tmp_path):
    use_judge_double({}, fallback=lambda prompt_id, payload: truthful(payload))
    result = score("pooling", context(tmp_path, session()), repeats=2)
    assert {j.repeat for j in result.judgements if j.item == f"pooled:{IN_CHAT}"} == {0, 1}
    from colabkit.evaluation.reliability import repeat_agreement

    agreement = repeat_agreement([result])
    assert "kappa:pooling/pooled" in agreement and "kappa:pooling/text" in agreement


def test_not_defined_for_the_single_agent_and_missing_without_a_stored_briefing(tmp_path):
    double = use_judge_double({}, fallback=None)
    t = Trajectory(("ai",))
    t.edit("ai", "H")
    single = score("pooling", context(tmp_path / "a", t, variant_name="single"))
    assert single.values == dict.fromkeys((*columns("pooling"), "private_items")) and double.calls == []
    unstored = score("pooling_lexical", context(tmp_path / "b", session(), {"D": BRIEFINGS["D"]}))
    assert unstored.values["pooling_lex"] is None and unstored.flags == ["pooling:no_briefing_stored(R)"]


def test_the_judge_sees_content_alone_one_question_per_text_and_one_for_the_hypothesis(tmp_path):
    double = use_judge_double({}, fallback=lambda prompt_id, payload: truthful(payload))
    score("pooling", context(tmp_path, session()))
    asked = [c["payload"] for c in double.calls if c["prompt_id"] == "pooling_conveys"]
    assert sorted(p["text"]["kind"] for p in asked) == sorted([  # asked concurrently: any order
        "the team's shared memory", "chat message", "code cell", "edit of the result", "the submitted hypothesis"])
    assert all(set(p["text"]) == {"kind", "content"} for p in asked)  # not who wrote it
    assert all(set(n) == {"n", "note"} for n in asked[0]["private_notes"])  # not who held it


def test_a_session_the_real_engine_recorded_maps_every_event_kind_to_its_channel(tmp_path):
    from helpers.stored_session import HYPOTHESIS as SIGNED
    from helpers.stored_session import record_scaffolded_session

    from colabkit.evaluation.storage import load_context

    ctx = load_context(record_scaffolded_session(tmp_path / "exp"), None, None)
    texts = shared_record(ctx.events)
    assert [(t.channel, t.author) for t in texts] == [
        ("memory", "system"), ("cell", "ai"), ("chat", "R"), ("cell", "D"),
        ("reason", "ai"), ("reason", "R"), ("editor", "ai"), ("chat", "ai")]  # held edit, R's reason, applied edit
    assert texts[4].text == SIGNED and texts[5].text == "matches the counts"
    result = score("pooling_lexical", ctx)
    # the scripted team says nothing of its private notes: every item stays unshared, and says why delay is missing
    assert result.values["pooling_lex"] == 0 and result.values["private_items"] == 28
    assert result.values["pooling_lex_delay"] is None and result.flags == ["pooling_lex:nothing_pooled"]
