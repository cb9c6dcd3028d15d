"""S_hyp: the share of the submitted hypothesis's claims that the team's own results support.

In the spirit of RAGAS faithfulness (paper-metrics notes, section 5): a judge splits the
submitted hypothesis (the editor text at the end) into atomic claims (context or period,
variables, direction or relation, numbers), then checks each claim against the evidence:
the outputs of the cells that ran without an error before the submission. Messages, persona
knowledge and memory text are not evidence; a supported claim must name the cell whose
output supports it, and naming a cell that is not evidence is garbage (missing).

    S_hyp = #supported claims / #claims;   s_hyp_all = (every claim supported)

Each claim's verdict is kept as evidence (`claim_evidence`): the claim, whether it is
supported (None when the judge gave no usable answer, or named a cell that is not evidence:
never supported by default), the supporting cell and the event id that ran it, so a reader
(the explorer, the Inspect export) can follow a claim to its cell.

Undelivered (empty editor) is 0 and not all-supported, as in Co-Gym's delivery convention.
A delivered hypothesis with no successful cell behind it is 0 as well (nothing could support
it; no judge is asked). A failed extraction or check, or an extraction with no claim, leaves
both values missing and flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgePrompt, Verdict
from colabkit.evaluation.metrics.process import (
    ask_each,
    clip,
    missing,
    missing_flag,
    render_cell,
    successful_cells,
    transient,
    values_of,
    verdict_flags,
)
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.session import Event
from colabkit.workspace import CellResult

METRIC = "s_hyp"
CELL_CHARS = 700
MAX_CLAIMS = 12
CLAIM_CHARS = 200


class ClaimList(BaseModel):
    """The extraction judge's answer."""

    claims: list[Annotated[str, Field(max_length=CLAIM_CHARS)]] = Field(
        max_length=MAX_CLAIMS, description="atomic claims, each one short sentence")


class ClaimVerdict(BaseModel):
    """The support judge's answer for one claim."""

    reason: str = Field(max_length=200, description="one short sentence")
    supported: bool
    cell: int | None = Field(description="the number of the supporting cell, or null")


class SupportResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    s_hyp: float | None
    s_hyp_all: bool | None
    n_claims: int | None
    n_supported: int | None
    flags: tuple[str, ...] = ()


class ClaimEvidence(BaseModel):
    """One claim of the submitted hypothesis and what the judge linked it to (stored in details)."""

    model_config = ConfigDict(frozen=True)

    claim: str
    supported: bool | None
    """None: no usable verdict (missing, garbage, or a cell that is not evidence)."""
    cell: int | None = None
    """The supporting cell's index in the workspace snapshot (only when supported)."""
    event_ids: tuple[str, ...] = ()
    """The event(s) that ran that cell (`Event.event_id`)."""
    reason: str | None = None


def claim_item(index: int) -> str:
    return f"claim-{index}"


def hypothesis_support(
    delivered: bool, claims: Sequence[str] | None, verdicts: Mapping[str, ClaimVerdict | None],
    cells: Sequence[CellResult],
) -> SupportResult:
    """S_hyp from the extracted claims and the judge's verdict per claim (`claim_item` ids)."""
    if not delivered:
        return SupportResult(s_hyp=0.0, s_hyp_all=False, n_claims=0, n_supported=0)
    if not cells:
        return SupportResult(s_hyp=0.0, s_hyp_all=False, n_claims=len(claims) if claims is not None else None,
                             n_supported=0)
    if claims is None:
        return SupportResult(s_hyp=None, s_hyp_all=None, n_claims=None, n_supported=None,
                             flags=(f"{METRIC}:claims_missing",))
    if not claims:
        return SupportResult(s_hyp=None, s_hyp_all=None, n_claims=0, n_supported=None,
                             flags=(f"{METRIC}:no_claims_extracted",))
    items = [claim_item(i) for i in range(len(claims))]
    absent = missing(verdicts, items)
    ok = {c.index for c in cells}
    garbage = [i for i in items if (v := verdicts.get(i)) is not None and v.supported and v.cell not in ok]
    if absent or garbage:
        flags = [missing_flag(METRIC, absent)] if absent else []
        if garbage:
            flags.append(f"{METRIC}:judge_named_no_successful_cell({len(garbage)})")
        return SupportResult(s_hyp=None, s_hyp_all=None, n_claims=len(claims), n_supported=None, flags=tuple(flags))
    supported = sum(1 for i in items if (v := verdicts[i]) is not None and v.supported)
    return SupportResult(s_hyp=supported / len(claims), s_hyp_all=supported == len(claims),
                         n_claims=len(claims), n_supported=supported)


def claim_evidence(claims: Sequence[str], verdicts: Mapping[str, ClaimVerdict | None], cells: Sequence[CellResult],
                   events: Sequence[Event]) -> list[ClaimEvidence]:
    """Each claim with its verdict and, when supported, the cell and the event that ran it."""
    ok = {c.index for c in cells}
    ran: dict[int, list[str]] = {}
    for event in events:
        if event.action == "execute_code" and event.cell_index is not None:
            ran.setdefault(event.cell_index, []).append(event.event_id)
    found = []
    for i, claim in enumerate(claims):
        verdict = verdicts.get(claim_item(i))
        if verdict is None or (verdict.supported and verdict.cell not in ok):
            found.append(ClaimEvidence(claim=claim, supported=None, reason=None if verdict is None else verdict.reason))
        elif verdict.supported and verdict.cell is not None:
            found.append(ClaimEvidence(claim=claim, supported=True, cell=verdict.cell,
                                       event_ids=tuple(ran.get(verdict.cell, ())), reason=verdict.reason))
        else:
            found.append(ClaimEvidence(claim=claim, supported=False, reason=verdict.reason))
    return found


CLAIMS_PROMPT = JudgePrompt(id="hypothesis_claims", version=1, instructions=f"""\
You split a scientific hypothesis into atomic claims. The input is JSON with the team's
question ("query") and the submitted "hypothesis". List every distinct statement the
hypothesis makes that could be checked against data: the time or context it is about,
which variables are involved, the direction or kind of relation, and each number it states.
One short sentence per claim, in the hypothesis's own terms, at most {MAX_CLAIMS} claims;
do not add claims the hypothesis does not make. Answer in JSON.""")

SUPPORT_PROMPT = JudgePrompt(id="claim_support", version=1, instructions="""\
You check one claim against the evidence a team produced. The input is JSON: the "claim",
the full "hypothesis" it comes from (context only), and the code cells that ran without an
error, each with its number, code and output ("cells"). The claim is supported only if the
OUTPUT of some cell shows it (the numbers or result printed there entail the claim); code
that was written but whose output does not show the result is not support, and neither is
general knowledge. If supported, give the cell's number; otherwise answer supported=false
and cell=null. Answer in JSON.""")


def claims_fields(query: str, hypothesis: str) -> dict[str, Any]:
    return {"query": query, "hypothesis": clip(hypothesis, 2000)}


def support_fields(claim: str, hypothesis: str, cells: Sequence[CellResult]) -> dict[str, Any]:
    return {"claim": claim, "hypothesis": clip(hypothesis, 1000),
            "cells": [clip(render_cell(c, CELL_CHARS), CELL_CHARS + 100) for c in cells]}


@register_scorer
class SupportScorer(Scorer):
    """S_hyp and s_hyp_all: claims extracted from the submission, each checked on the cells."""

    name = "s_hyp"
    version = "2"  # 2: details carry each claim's evidence (claim -> cell -> event id)
    prompts = (CLAIMS_PROMPT, SUPPORT_PROMPT)
    columns = ("s_hyp", "s_hyp_all")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        cells = successful_cells(ctx.snapshot)
        claims: list[str] | None = None
        extraction: dict[str, Verdict[ClaimList]] = {}
        checks: dict[str, Verdict[ClaimVerdict]] = {}
        if ctx.delivered and cells:  # otherwise the value is 0 whatever the claims are
            query = ctx.task.query if ctx.task is not None else ""
            extraction = await ask_each(ctx, CLAIMS_PROMPT, {"claims": claims_fields(query, ctx.hypothesis)},
                                        ClaimList)
            answer = extraction["claims"].value
            claims = None if answer is None else [c.strip() for c in answer.claims if c.strip()]
            checks = await ask_each(ctx, SUPPORT_PROMPT, {claim_item(i): support_fields(c, ctx.hypothesis, cells)
                                                          for i, c in enumerate(claims or ())}, ClaimVerdict)
        verdicts = values_of(checks)
        result = hypothesis_support(ctx.delivered, claims, verdicts, cells)
        flags = [*result.flags, *verdict_flags(extraction, checks)]
        judgements = [Judgement.of(v, metric="s_hyp", item="claims",
                                   score=None if v.value is None else float(len(v.value.claims)))
                      for v in extraction.values()]
        judgements += [Judgement.of(v, metric="s_hyp", item=f"claim:{item}",
                                    label=None if v.value is None else str(v.value.supported).lower())
                       for item, v in checks.items()]
        return ScoreResult(values={"s_hyp": result.s_hyp, "s_hyp_all": result.s_hyp_all}, flags=flags,
                           judgements=judgements, complete=not transient(flags),
                           details={"claims": claims, "n_claims": result.n_claims,
                                    "n_supported": result.n_supported,
                                    "evidence": [e.model_dump(mode="json") for e in
                                                 claim_evidence(claims or (), verdicts, cells, ctx.events)]})
