"""Read stored sessions back as pandas tables, fast enough for thousands of sessions.

Two tables, as Inspect's dataframe API has them: `events` (one row per event, its LLM calls
folded into totals columns) and `sessions` (one row per finished session). Both carry the
factor columns (task, variant, seed) so an analysis never needs a join to group.

Only finished sessions (with `session.json`) are read; an interrupted run's folder is
invisible. Parsing 100k JSON lines costs seconds, so `export_parquet` writes a columnar copy
of both tables, and the loaders use it whenever it is still current: newer than every
session folder and covering exactly the finished sessions on disk. Otherwise they fall back
to the JSON lines, so a stale export can never hide a session.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson
import pandas as pd

from colabkit.errors import ColabkitError
from colabkit.store.atomic import atomic_path
from colabkit.store.recorder import EVENTS_FILE, SESSION_FILE

EVENTS_PARQUET = "events.parquet"
SESSIONS_PARQUET = "sessions.parquet"

_EVENT_FIELDS = ("phase", "round", "participant", "action", "status", "result", "thought",
                 "request_id", "signatory", "decision", "decision_reason", "proposer",
                 "cell_index", "message_index", "editor_version", "time")
_GATE_FIELDS = ("gate_scope", "gate_note", "gate_signatory")
_CALL_TOTALS = ("n_calls", "prompt_tokens", "completion_tokens", "tokens", "cost", "latency_s",
                "cache_hits", "llm_errors")
EVENT_COLUMNS = ("session_id", "event_id", "seq", "schema_version", "task_id", "variant", "seed", *_EVENT_FIELDS,
                 *_GATE_FIELDS, "args_json", *_CALL_TOTALS, "prompt_hashes")
SESSION_COLUMNS = ("session_id", "schema_version", "task_id", "task_digest", "variant", "variant_hash", "humans", "memory", "gate_source",
                   "seed", "model", "models_json", "action_budget", "idle_rounds", "max_rounds", "ended_by",
                   "final_hypothesis", "n_events", "memory_digest", "persona_versions_json", "briefings_json",
                   "isolation_level", "package_version", "started", "finished", "duration_s")
_INDEX_COLUMNS = ("cell_index", "message_index", "editor_version")  # nullable: only creating events have one
_INT_EVENT_COLUMNS = ("seq", "schema_version", "seed", "round", "n_calls", "prompt_tokens", "completion_tokens", "tokens",
                      "cache_hits", "llm_errors")


def _finished(out: Path, session_ids: Iterable[str] | None) -> list[tuple[str, Path, int]]:
    """(id, folder, folder mtime in ns) of every finished session under `out`, sorted by id."""
    if not out.is_dir():
        raise ColabkitError(f"results folder not found: {out}")
    wanted = set(session_ids) if session_ids is not None else None
    found = []
    with os.scandir(out) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir() or (wanted is not None and entry.name not in wanted):
                continue
            if os.path.isfile(os.path.join(entry.path, SESSION_FILE)):
                found.append((entry.name, Path(entry.path), entry.stat().st_mtime_ns))
    return sorted(found)


def _current_parquet(out: Path, name: str, finished: list[tuple[str, Path, int]], filtered: bool) -> Path | None:
    """The parquet export `name` if it still reflects the finished sessions on disk, else None."""
    path, sessions_path = out / name, out / SESSIONS_PARQUET
    try:
        stamp = min(path.stat().st_mtime_ns, sessions_path.stat().st_mtime_ns)
    except FileNotFoundError:
        return None
    if any(mtime >= stamp for _, _, mtime in finished):
        return None
    exported = set(pd.read_parquet(sessions_path, columns=["session_id"])["session_id"])
    on_disk = {sid for sid, _, _ in finished}
    return path if (on_disk <= exported if filtered else on_disk == exported) else None


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _session_row(rec: dict) -> dict:
    spec, variant = rec["spec"], rec["spec"]["variant"]
    settings = spec["settings"]
    # Records written before schema version 2 lack the version and the fields it added.
    row = {
        "session_id": rec["session_id"], "schema_version": rec.get("schema_version", 1), "task_id": rec["task_id"],
        "task_digest": rec.get("task_digest"), "variant": variant["name"],
        "variant_hash": rec["variant_hash"], "humans": ",".join(variant["humans"]), "memory": variant["memory"],
        "gate_source": variant["gate_source"], "seed": rec["seed"], "model": rec["models"]["ai"]["model"],
        "models_json": _json(rec["models"]),
        "action_budget": settings["action_budget"], "idle_rounds": settings["idle_rounds"],
        "max_rounds": settings["max_rounds"], "ended_by": rec["ended_by"],
        "final_hypothesis": rec["final_hypothesis"], "n_events": rec["n_events"],
        "memory_digest": rec["memory_digest"], "persona_versions_json": _json(rec.get("persona_versions")),
        "briefings_json": _json(rec.get("briefings")), "isolation_level": rec["isolation_level"],
        "package_version": rec["package_version"], "started": rec["started"], "finished": rec["finished"],
    }
    for key, value in rec["totals"].items():
        row[key if key not in SESSION_COLUMNS else f"total_{key}"] = value
    return row


def _sessions_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=None if rows else list(SESSION_COLUMNS))
    for col in ("started", "finished"):
        df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601")
    df["duration_s"] = (df["finished"] - df["started"]).dt.total_seconds()
    totals = [c for c in df.columns if c not in SESSION_COLUMNS]
    df[totals] = df[totals].astype("float64")
    df = df.astype({"seed": "int64", "schema_version": "int64", "n_events": "int64", "action_budget": "int64", "idle_rounds": "int64",
                    "max_rounds": "int64", "memory": "bool"})
    return df[[*SESSION_COLUMNS, *totals]].reset_index(drop=True)


def _append_events(folder: Path, rec: dict, cols: dict[str, list]) -> None:
    sid, task_id, variant, seed = rec["session_id"], rec["task_id"], rec["spec"]["variant"]["name"], rec["seed"]
    for line in (folder / EVENTS_FILE).read_bytes().splitlines():
        if not line:
            continue
        ev = orjson.loads(line)
        calls = ev.get("llm_calls") or ()
        cols["session_id"].append(sid)
        cols["event_id"].append(f"{sid}-{ev['seq']:05d}")
        cols["seq"].append(ev["seq"])
        cols["schema_version"].append(ev.get("schema_version", 1))  # absent: written by version 1
        cols["task_id"].append(task_id)
        cols["variant"].append(variant)
        cols["seed"].append(seed)
        for field in _EVENT_FIELDS:
            cols[field].append(ev.get(field))
        gate = ev.get("gate_rule") or {}
        cols["gate_scope"].append(gate.get("scope"))
        cols["gate_note"].append(gate.get("note"))
        cols["gate_signatory"].append(gate.get("signatory"))
        cols["args_json"].append(_json(ev.get("args") or {}))
        cols["prompt_hashes"].append(";".join(c.get("prompt_hash") or "" for c in calls))
        prompt = sum(c["prompt_tokens"] for c in calls)
        completion = sum(c["completion_tokens"] for c in calls)
        cols["n_calls"].append(len(calls))
        cols["prompt_tokens"].append(prompt)
        cols["completion_tokens"].append(completion)
        cols["tokens"].append(prompt + completion)
        cols["cost"].append(float(sum(c["cost"] for c in calls)))
        cols["latency_s"].append(float(sum(c["latency_s"] for c in calls)))
        cols["cache_hits"].append(sum(1 for c in calls if c["cache_hit"]))
        cols["llm_errors"].append(sum(1 for c in calls if c.get("error")))


def _read_jsonl(finished: list[tuple[str, Path, int]], *, events: bool) -> pd.DataFrame:
    """Build the sessions table (events=False) or the events table (events=True) from JSON."""
    rows: list[dict] = []
    cols: dict[str, list] = {c: [] for c in EVENT_COLUMNS}
    for _, folder, _ in finished:
        rec = orjson.loads((folder / SESSION_FILE).read_bytes())
        if events:
            _append_events(folder, rec, cols)
        else:
            rows.append(_session_row(rec))
    if not events:
        return _sessions_frame(rows)
    df = pd.DataFrame(cols)
    df = df.astype({c: "int64" for c in _INT_EVENT_COLUMNS} | {c: "Int64" for c in _INDEX_COLUMNS}
                   | {"time": "float64", "cost": "float64", "latency_s": "float64"})
    return df.sort_values(["session_id", "seq"], kind="stable").reset_index(drop=True)


def _load(out: Path | str, name: str, session_ids: Iterable[str] | None, *, events: bool) -> pd.DataFrame:
    out = Path(out)
    finished = _finished(out, session_ids)
    parquet = _current_parquet(out, name, finished, filtered=session_ids is not None)
    if parquet is None:
        return _read_jsonl(finished, events=events)
    df = pd.read_parquet(parquet)
    if session_ids is not None:
        df = df[df["session_id"].isin({sid for sid, _, _ in finished})].reset_index(drop=True)
    return df


def load_events(out: Path | str, session_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per event of every finished session under `out` (or of `session_ids`).

    Columns: ids and factors (session_id, event_id, seq, schema_version, task_id, variant,
    seed), the event's own fields (with the nullable join keys cell_index, message_index and
    editor_version: indices into the session's snapshot), the gate rule of a `pending` event
    (gate_scope, gate_note, gate_signatory), `args_json` (the action's arguments as JSON
    text: their shape varies by action), the totals of the LLM calls behind the event
    (n_calls, prompt_tokens, completion_tokens, tokens, cost, latency_s, cache_hits,
    llm_errors) and their `prompt_hashes` (";"-joined, keys into `prompts.jsonl`).
    """
    return _load(out, EVENTS_PARQUET, session_ids, events=True)


def load_sessions(out: Path | str, session_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per finished session under `out` (or of `session_ids`), sorted by session id.

    Columns: factors (task, variant and its parts, seed, model), settings, outcome
    (ended_by, final_hypothesis, n_events), provenance (schema version, task digest, persona
    versions and briefings as JSON, isolation, package version, times),
    then one float column per key of the session's totals (actions, llm_calls, cost, ...).
    """
    return _load(out, SESSIONS_PARQUET, session_ids, events=False)


def export_parquet(out: Path | str) -> Path:
    """Write `sessions.parquet` and `events.parquet` into `out` atomically; return the latter.

    Always rebuilt from the JSON lines (the source of truth), so it can also repair a stale
    or damaged export. Loaders use the export only while it covers every finished session.
    """
    out = Path(out)
    finished = _finished(out, None)
    sessions = _read_jsonl(finished, events=False)
    events = _read_jsonl(finished, events=True)
    with atomic_path(out / SESSIONS_PARQUET) as tmp:
        sessions.to_parquet(tmp, index=False)
    with atomic_path(out / EVENTS_PARQUET) as tmp:
        events.to_parquet(tmp, index=False)
    return out / EVENTS_PARQUET
