"""Scores as tidy pandas tables: per session, per judged item, per gated event.

The score files are the source of truth; `export_tables` writes a parquet copy of each table
beside the sessions' own tables (`scores.parquet`, `judgements.parquet`,
`gate_annotations.parquet`), and the loaders use it while it is current (newer than every
session and score folder), else rebuild from the files, so a stale export never hides a score.

A session scored by several judges has one row per judge model (`judge_model`); rule-based
metrics repeat on each. For each scorer and judge the most recently written file is used,
so after re-scoring with a changed prompt the new result is the one shown. Missing values are
NaN (or <NA> for yes/no columns), never 0. A session that ended by a crash or a provider
refusal (`INFRASTRUCTURE_ENDINGS`) says nothing about its team: its metrics are missing and
flagged, so it never counts as an undelivered result in the study's statistics (the
analysis layer's `missing_score_bounds` shows what the missing ones could change). A session
that reached its spending cap is an outcome: it keeps its ending and its scores.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from colabkit.errors import ColabkitError
from colabkit.evaluation.records import ScoreFile
from colabkit.evaluation.reliability import SanityCheck, load_sanity_check
from colabkit.evaluation.storage import SCORES_DIR, finished_sessions, stored_scores
from colabkit.session.events import INFRASTRUCTURE_ENDINGS
from colabkit.store import SESSION_FILE, atomic_path, remove_stale_temporaries

SCORES_PARQUET = "scores.parquet"
JUDGEMENTS_PARQUET = "judgements.parquet"
GATES_PARQUET = "gate_annotations.parquet"

SESSION_KEYS = ("session_id", "task_id", "variant", "structure", "composition", "seed", "termination")
RUN_COLUMNS = ("ended_by", "ai_steps", "expired_requests")
"""How the session ran, from its record: its ending, the AI's steps, the requests that expired
(the study table's per-variant outcomes, `colabkit.store.run_outcomes`)."""
METRIC_COLUMNS = ("delivered", "performance", "hms", "h_init_norm", "h_init_zero_rule", "h_init_events",
                  "h_init_events_all", "ca_plus", "ca_minus", "a_profile", "a_profile_with_decisions", "c_wf",
                  "s_hyp", "s_hyp_all", "w_total", "w_human",
                  "approval_rate", "rejection_rate", "n_gated", "sim_failure", "sim_failure_kind",
                  "sim_failure_events")
JUDGE_COLUMNS = ("judge_model", "judge_grade", "judge_reliable", "flags")
SCORE_COLUMNS = (*SESSION_KEYS, *RUN_COLUMNS, *METRIC_COLUMNS, *JUDGE_COLUMNS)
BOOL_COLUMNS = ("delivered", "s_hyp_all", "sim_failure", "judge_reliable")
JUDGEMENT_COLUMNS = ("session_id", "task_id", "variant", "scorer", "scorer_id", "metric", "item", "repeat",
                     "label", "score", "flag", "raw", "prompt_id", "prompt_version", "judge_model",
                     "judge_grade", "judge_reliable")
GATE_COLUMNS = ("session_id", "variant", "request_id", "action", "proposer", "signatory", "decision",
                "latency_events", "latency_rounds", "expertise_fit", "grounded", "correct_in_hindsight",
                "changed_course", "flags", "judge_model", "judge_grade", "judge_reliable")


def structure_of(variant: dict[str, Any]) -> tuple[str, str]:
    """(structure, composition) of a stored variant config, from its parts, not its name."""
    humans = variant.get("humans") or ()
    composition = "".join(h.lower() for h in sorted(humans)) or "none"
    if not humans:
        return "single", composition
    if variant.get("ai") is False:  # one human alone (a solo variant, beyond the study)
        return "solo", composition
    if variant.get("memory_updates"):  # a living memory (Dynamic); absent from older records
        return "dynamic", composition
    if variant.get("gate_source") == "self":
        return "scaffolded", composition
    if variant.get("gate_source") == "preassigned":
        return "preassigned", composition
    return ("memory" if variant.get("memory") else "default"), composition


def session_keys(folder: Path) -> tuple[dict[str, Any], str | None]:
    """The factor columns of a stored session and how it ended, read from its raw record so
    the tables work for every record schema version (scoring itself needs the current one)."""
    record = orjson.loads((folder / SESSION_FILE).read_bytes())
    variant = record["spec"]["variant"]
    structure, composition = structure_of(variant)
    return {"session_id": record["session_id"], "task_id": record["task_id"], "variant": variant["name"],
            "structure": structure, "composition": composition, "seed": record["seed"],
            # the session-end rule (colabkit.analysis.inference.decisions.termination); records from before the setting ran all_sides
            "termination": record["spec"].get("settings", {}).get("termination", "all_sides"),
            "ended_by": record.get("ended_by"), "ai_steps": (record.get("totals") or {}).get("ai_actions"),
            "expired_requests": (record.get("totals") or {}).get("expired")}, record.get("ended_by")


def _latest(files: list[ScoreFile]) -> dict[tuple[str, str | None], ScoreFile]:
    """The newest file per (scorer, judge model), as the tables show them."""
    latest: dict[tuple[str, str | None], ScoreFile] = {}
    for score in files:  # oldest first, so later ones win
        latest[(score.scorer, score.judge.model if score.judge else None)] = score
    return latest


def _with_current_check(results: Path, score: ScoreFile,
                        checks: dict[str, SanityCheck | None]) -> ScoreFile:
    """`score` with `judge_reliable` from its judge's latest stored sanity check (a check
    redone after a transient judge failure updates every table, not only new scores)."""
    if score.judge is None:
        return score
    key = score.judge.output_identity()
    if key not in checks:
        checks[key] = load_sanity_check(results, score.judge)
    check = checks[key]
    if check is None or check.passed == score.judge_reliable:
        return score
    return score.model_copy(update={"judge_reliable": check.passed})


def _build(results: Path) -> dict[str, pd.DataFrame]:
    checks: dict[str, SanityCheck | None] = {}
    score_rows: list[dict[str, Any]] = []
    judgement_rows: list[dict[str, Any]] = []
    gate_rows: list[dict[str, Any]] = []
    for folder in finished_sessions(results):
        keys, ended_by = session_keys(folder)
        latest = _latest(stored_scores(folder))
        latest = {key: _with_current_check(results, score, checks) for key, score in latest.items()}
        rule_based = [s for (_, judge), s in latest.items() if judge is None]
        judges: list[str | None] = [*sorted({j for (_, j) in latest if j is not None})] or [None]
        for judge in judges:
            used = rule_based + [s for (_, j), s in latest.items() if j == judge and j is not None]
            row: dict[str, Any] = {**keys, "judge_model": judge}
            flags: list[str] = []
            for score in used:
                row.update(score.result.values)
                flags.extend(f"{score.scorer}: {flag}" for flag in score.result.flags)
                if score.judge is not None:
                    row["judge_grade"], row["judge_reliable"] = score.judge_grade, score.judge_reliable
            if ended_by in INFRASTRUCTURE_ENDINGS:
                row.update(dict.fromkeys([*METRIC_COLUMNS, *(k for s in used for k in s.result.values)]))
                flags.insert(0, f"session: ended by {ended_by}, metrics missing (rerun with --retry-errors)")
            row["flags"] = ";".join(flags)
            score_rows.append(row)
        for score in latest.values():
            judge_cols = {"judge_model": score.judge.model if score.judge else None,
                          "judge_grade": score.judge_grade, "judge_reliable": score.judge_reliable}
            judgement_rows.extend({
                **{k: keys[k] for k in ("session_id", "task_id", "variant")}, "scorer": score.scorer,
                "scorer_id": score.scorer_id, **j.model_dump(include=set(JUDGEMENT_COLUMNS)), **judge_cols}
                for j in score.result.judgements)
            gate_rows.extend({
                "session_id": keys["session_id"], "variant": keys["variant"],
                **g.model_dump(exclude={"flags"}), "flags": ";".join(g.flags), **judge_cols}
                for g in score.result.gate_annotations)
    return {SCORES_PARQUET: _scores_frame(score_rows),
            JUDGEMENTS_PARQUET: _typed(pd.DataFrame(judgement_rows, columns=list(JUDGEMENT_COLUMNS)),
                                       floats=("score",), ints=("repeat", "prompt_version"),
                                       bools=("judge_reliable",)),
            GATES_PARQUET: _typed(pd.DataFrame(gate_rows, columns=list(GATE_COLUMNS)),
                                  floats=("latency_events", "latency_rounds"),
                                  bools=("expertise_fit", "grounded", "correct_in_hindsight", "changed_course",
                                         "judge_reliable"))}


def _scores_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    extra = sorted({k for row in rows for k in row} - set(SCORE_COLUMNS))
    df = pd.DataFrame(rows, columns=[*SCORE_COLUMNS, *extra])
    numeric = [c for c in (*METRIC_COLUMNS, *extra) if c not in BOOL_COLUMNS
               and df[c].map(lambda v: v is None or isinstance(v, int | float)).all()]
    df = _typed(df, floats=(*numeric, "ai_steps", "expired_requests"), bools=BOOL_COLUMNS, ints=("seed",))
    return df.sort_values(["session_id", "judge_model"], kind="stable", na_position="first").reset_index(drop=True)


def _typed(df: pd.DataFrame, *, floats: tuple[str, ...] = (), bools: tuple[str, ...] = (),
           ints: tuple[str, ...] = ()) -> pd.DataFrame:
    for col in floats:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    for col in bools:
        df[col] = df[col].astype("boolean")
    for col in ints:
        df[col] = df[col].astype("int64")
    return df


def _stamp(results: Path) -> int:
    """Newest modification time of any session or scores folder (a new score renames into
    its scores folder, which updates the folder's time)."""
    newest = 0
    for folder in finished_sessions(results):
        for path in (folder, folder / SCORES_DIR):
            try:
                newest = max(newest, os.stat(path).st_mtime_ns)
            except FileNotFoundError:
                continue
    return newest


def export_tables(results: Path | str) -> dict[str, Path]:
    """Write the three tables as parquet into `results` (atomically); return their paths."""
    results = Path(results)
    written = {}
    for name, frame in _build(results).items():
        remove_stale_temporaries(results / name)  # a killed earlier export's leftovers
        with atomic_path(results / name) as tmp:
            frame.to_parquet(tmp, index=False)
        written[name] = results / name
    return written


def _load(results: Path | str, name: str) -> pd.DataFrame:
    results = Path(results)
    if not results.is_dir():
        raise ColabkitError(f"results folder not found: {results}")
    path = results / name
    try:
        if path.stat().st_mtime_ns > _stamp(results):
            return pd.read_parquet(path)
    except FileNotFoundError:
        pass
    return _build(results)[name]


def load_scores(results: Path | str) -> pd.DataFrame:
    """One row per scored session (per judge model): factors, every metric, judge, flags."""
    return _load(results, SCORES_PARQUET)


def load_judgements(results: Path | str) -> pd.DataFrame:
    """One row per judged item and repeat: metric, item, label or score, raw answer, prompt."""
    return _load(results, JUDGEMENTS_PARQUET)


def load_gate_annotations(results: Path | str) -> pd.DataFrame:
    """One row per gated request: facts (proposer, signatory, decision, latency) and labels."""
    return _load(results, GATES_PARQUET)
