"""A person's seat session, replayed offline, held against simulated sessions of its variant.

The person plays D in scaffolded-dr (the seat scenario's team: the AI's one edit waits for
D's signature); the person's answers come from a test desk that answers every question at
once (the Desk protocol's stand-in: the real forms are tested in test_seat.py). Three more
sessions of the same variant, task and scripts for the AI and R have a scripted model in D's
seat, each with its own style. The fingerprints are read from the stored events; the card is
built from them. No network: every model is the scripted double, the kernel is real.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers import seat_scenario as sc
from helpers.scripted import use_scripted
from helpers.stored_session import RATIFY, SLOTS, say

from colabkit.analysis.realism import card_summary, fingerprints, person_cards
from colabkit.runner import arecord_session, record_session
from colabkit.runner.build import build_spec
from colabkit.seat import replay_session, seat_spec
from colabkit.session.scheduler import round_order
from colabkit.session.seats.person import SeatTerms
from colabkit.session.seats.policy import PersonSeat, Presentation, Question
from colabkit.store import load_events, load_sessions
from colabkit.tasks import load_tasks

TASK = load_tasks().get(sc.TASK_ID)
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PERSON_MESSAGE = "Shall I check the counts per century?"
SIM_MESSAGES = ("I have reviewed the hoard table and the counts look consistent with the period labels overall.",
                "The dataset contains axes in most hoards and the twelfth century has the largest share of them.",
                "Everything appears in order from my side and I agree with the current direction of the analysis.")


class AnsweringDesk:
    """A person who answers every question the moment it is shown, by the scenario's plan."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def present(self, question: Question[Any]) -> Presentation[Any]:
        future = asyncio.get_running_loop().create_future()
        future.set_result(question.schema.model_validate(self.answer(question)))
        return Presentation(future=future, rendered_hash="test-desk")

    def withdraw(self, presentation: Presentation[Any], reason: str) -> None:
        raise AssertionError(f"the desk answers at once; withdrawn: {reason}")

    def answer(self, question: Question[Any]) -> dict[str, Any]:
        if question.stage == "propose":
            return {**SLOTS, "gates": []}
        if question.stage == "ratify":
            return RATIFY[0]
        obs = question.observation
        assert obs is not None
        if obs.deciding:  # a decision step: approve what is open for it
            step = say("approve", sc.APPROVAL, obs.requests_for_me[0].request_id) if obs.requests_for_me \
                else say("wait")
        elif "send_message" not in self.done:
            step = say("send_message", PERSON_MESSAGE)
        elif "execute_code" not in self.done:
            step = say("execute_code", sc.CODE)
        else:
            step = say("wait")
        self.done.append(step["action"])
        return step


def ai_first_seeds(n: int) -> list[int]:
    team = ("ai", "D", "R")
    return [s for s in range(2000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, 6))][:n]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("realism") / "results"
    seeds = ai_first_seeds(4)
    use_scripted(sc.scripts(), default=sc.DEFAULT)
    spec = seat_spec(sc.TASK_ID, sc.VARIANT, sc.SEAT, seeds[0], participant_id=sc.PARTICIPANT, models=sc.models())
    terms = SeatTerms.model_validate(spec.model_for(sc.SEAT).extra["seat"])
    person = asyncio.run(arecord_session(spec, TASK, out=out, seats={sc.SEAT: PersonSeat(terms, AnsweringDesk())}))
    for seed, text in zip(seeds[1:], SIM_MESSAGES, strict=True):
        steps = [say("send_message", text), say("send_message", text.split(" and ")[0] + "."),
                 say("approve", "The hypothesis matches what I found in the hoard counts table.", "req-1")]
        use_scripted({**sc.scripts(), "D": [{**SLOTS, "gates": []}, *RATIFY, *steps]}, default=sc.DEFAULT)
        sim = build_spec(sc.TASK_ID, sc.VARIANT, seed, models={**sc.models(), "D": "scripted/D"})
        record_session(sim, TASK, out=out)
    return out, person


def test_a_replayed_seat_session_beside_simulated_ones_gives_a_fidelity_card(results, socket_guard):
    out, person = results
    replay = asyncio.run(replay_session(person, task=TASK))
    assert replay.identical  # the person sample is what a replay of the seat gives, offline
    prints = fingerprints(load_events(out), load_sessions(out))
    d = prints[prints["participant"] == "D"].set_index("kind")
    assert sorted(prints.loc[prints["participant"] == "D", "kind"]) == ["person", "simulated", "simulated", "simulated"]
    people = d.loc[["person"]].iloc[0]
    assert people["simulator"] == "person" and people["session_id"] == person.name
    assert people["question_share"] == 1.0 and people["decision_rate"] == 1.0 and people["approval_share"] == 1.0
    assert people["reason_words"] == 5 and people["steps_to_first_act"] == 0  # PERSON, OK, matches, the, counts
    sims = d.loc["simulated"]
    assert set(sims["simulator"]) == {"scripted/D"} and (sims["question_share"] == 0).all()
    assert (sims["msg_words_mean"] > people["msg_words_mean"]).all()
    (card,) = person_cards(prints, permutations=19)
    assert card.title == "D: people vs scripted/D" and card.verdict == "intervals only"
    row = card.table.set_index("feature").loc["msg_words_mean"]
    assert row["n_a"] == 1 and row["n_b"] == 3 and row["g"] > 0 and math.isfinite(row["ci_low"])
    assert card.classifier.note.startswith("too few to conclude")
    assert card.figure().axes
    summary = card_summary([card])
    assert summary.loc[0, "n_a"] == 1 and summary.loc[0, "n_b"] == 3 and summary.loc[0, "verdict"] == "intervals only"
    assert not socket_guard


def test_the_realism_notebook_renders_and_saves_the_cards(results, tmp_path):
    import papermill
    from helpers.cogym_logs import line, write_session

    out, _ = results
    write_session(tmp_path / "cogym", "s1", [line("agent", "SEND_TEAMMATE_MESSAGE(message=Ready?)"),
                                             line("user_7", "SEND_TEAMMATE_MESSAGE(message=Yes, go ahead.)")])
    saved = tmp_path / "saved"
    papermill.execute_notebook(str(NOTEBOOKS / "realism.ipynb"), str(tmp_path / "realism.ipynb"), cwd=str(NOTEBOOKS),
                               kernel_name="python3", progress_bar=False,
                               parameters={"experiment": "", "results": str(out), "cogym": str(tmp_path / "cogym"),
                                           "out": str(saved)})
    names = {p.name for p in saved.iterdir()}
    assert {"fingerprints.csv", "outside_fingerprints.csv", "simulator_failures.csv", "cards.csv", "card-d-people-vs-scripted-d.csv",
            "card-d-people-vs-scripted-d.png", "card-d-people-vs-scripted-d.svg",
            "card-d-people-vs-scripted-d-scale.png"} <= names  # the card drawn on the calibration scale
    cards = pd.read_csv(saved / "cards.csv")
    assert cards["card"].tolist() == ["D: people vs scripted/D", "R: outside people vs scripted/R (other tasks)"]
    assert set(cards["verdict"]) == {"intervals only"}
    assert cards["scale"].notna().all() and "scale_auc_low" in cards.columns
