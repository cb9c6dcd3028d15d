"""Read stored sessions back as pandas tables, fast enough for thousands of sessions.

Two tables, as Inspect's dataframe API has them: `events` (one row per event, its LLM calls
folded into totals columns) and `sessions` (one row per finished session). Both carry the
factor columns (task, variant, seed) so an analysis never needs a join to group.

Only finished sessions (with `session.json`) are read; an interrupted run's folder is
invisible. Parsing 100k JSON lines costs seconds, so `export_parquet` writes a columnar copy
of both tables, and the loaders use it whenever it is still current: newer than every
session folder, covering exactly the finished sessions on disk, and holding every column
this version's tables have. Otherwise they fall back to the JSON lines, so a stale export
(or one written before a column was added) can never hide a session or a column.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson
import pandas as pd
import pyarrow.parquet as pq

from colabkit.errors import ColabkitError, one_line
from colabkit.llm.records import upgrade_call
from colabkit.session.totals import upgrade_totals
from colabkit.store.atomic import atomic_path
from colabkit.store.layout import EVENTS_FILE, SESSION_FILE

EVENTS_PARQUET = "events.parquet"
SESSIONS_PARQUET = "sessions.parquet"

_EVENT_FIELDS = ("phase", "round", "participant", "action", "status", "result", "thought",
                 "request_id", "signatory", "decision", "decision_reason", "proposer",
                 "cell_index", "message_index", "editor_version", "time")
_GATE_FIELDS = ("gate_scope", "gate_note", "gate_signatory")
_CALL_TOTALS = ("n_calls", "prompt_tokens", "completion_tokens", "tokens", "provider_cached_tokens", "cost",
                "replayed_cost", "latency_s", "suite_replays", "llm_errors")
EVENT_COLUMNS = ("session_id", "event_id", "seq", "schema_version", "task_id", "variant", "seed", *_EVENT_FIELDS,
                 *_GATE_FIELDS, "args_json", *_CALL_TOTALS, "prompt_hashes", "output_modes", "actor_kind")
SESSION_COLUMNS = ("session_id", "schema_version", "task_id", "task_digest", "variant", "variant_hash", "humans", "person_seats", "memory", "gate_source",
                   "seed", "model", "models_json", "profile", "context_window", "action_budget", "idle_rounds", "max_rounds", "ended_by",
                   "termination", "budget_side", "final_hypothesis", "n_events", "memory_digest", "persona_versions_json", "briefings_json",
                   "isolation_level", "package_version", "environment_lock", "environment_exact", "started", "finished",
                   "duration_s")
_INDEX_COLUMNS = ("cell_index", "message_index", "editor_version")  # nullable: only creating events have one
_INT_EVENT_COLUMNS = ("seq", "schema_version", "seed", "round", "n_calls", "prompt_tokens", "completion_tokens", "tokens",
                      "provider_cached_tokens", "suite_replays", "llm_errors")


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
    columns = EVENT_COLUMNS if name == EVENTS_PARQUET else SESSION_COLUMNS
    if not set(columns) <= set(pq.read_schema(path).names):  # written by an older version
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
        "variant_hash": rec["variant_hash"], "humans": ",".join(variant["humans"]),
        # The seats a person played (their model is `person/<participant id>`), "" when none.
        "person_seats": ",".join(role for role, m in rec["models"].items() if m["model"].startswith("person/")),
        "memory": variant["memory"],
        "gate_source": variant["gate_source"], "seed": rec["seed"], "model": rec["models"]["ai"]["model"],
        "models_json": _json(rec["models"]),
        # The observation profile is a factor: sessions compared with each other must share it.
        "profile": spec.get("profile", {}).get("name"), "context_window": spec.get("profile", {}).get("context_window"),
        "action_budget": settings["action_budget"], "idle_rounds": settings["idle_rounds"],
        "max_rounds": settings["max_rounds"], "ended_by": rec["ended_by"],
        # the session-end rule; records from before the setting ran "all_sides"
        "termination": settings.get("termination", "all_sides"), "budget_side": rec.get("budget_side"),
        "final_hypothesis": rec["final_hypothesis"], "n_events": rec["n_events"],
        "memory_digest": rec["memory_digest"], "persona_versions_json": _json(rec.get("persona_versions")),
        "briefings_json": _json(rec.get("briefings")), "isolation_level": rec["isolation_level"],
        "package_version": rec["package_version"],
        # the lock the session ran under and whether it was installed exactly (None: before record v4)
        "environment_lock": (rec.get("environment") or {}).get("lock"),
        "environment_exact": None if rec.get("environment") is None else not rec["environment"].get("drift"),
        "started": rec["started"], "finished": rec["finished"],
    }
    for key, value in upgrade_totals(rec["totals"]).items():
        row[key if key not in SESSION_COLUMNS else f"total_{key}"] = value
    return row


def _sessions_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=None if rows else list(SESSION_COLUMNS))
    for col in ("started", "finished"):
        df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601")
    df["duration_s"] = (df["finished"] - df["started"]).dt.total_seconds()
    totals = [c for c in df.columns if c not in SESSION_COLUMNS]
    df[totals] = df[totals].astype("float64")
    df["context_window"] = df["context_window"].astype("Int64")  # None: unknown window
    df["environment_exact"] = df["environment_exact"].astype("boolean")  # None: a record from before v4
    df = df.astype({"seed": "int64", "schema_version": "int64", "n_events": "int64", "action_budget": "int64", "idle_rounds": "int64",
                    "max_rounds": "int64", "memory": "bool"})
    return df[[*SESSION_COLUMNS, *totals]].reset_index(drop=True)


def _call_sum(calls: list, key: str) -> float:
    return sum(c[key] for c in calls) if calls else 0


def _append_events(folder: Path, rec: dict, cols: dict[str, list]) -> None:
    """Append one session's events to the columns, a column at a time (a loop per column
    is several times faster than one per event appending to forty lists)."""
    path = folder / EVENTS_FILE
    sid, task_id, variant, seed = rec["session_id"], rec["task_id"], rec["spec"]["variant"]["name"], rec["seed"]
    try:
        events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
        n = len(events)
        seqs = [ev["seq"] for ev in events]
        gates = [ev.get("gate_rule") or {} for ev in events]
        calls = [[upgrade_call(x) for x in ev.get("llm_calls") or ()] for ev in events]
        prompt = [_call_sum(c, "prompt_tokens") for c in calls]
        completion = [_call_sum(c, "completion_tokens") for c in calls]
        cost = [float(_call_sum(c, "cost")) for c in calls]
        replayed = [float(sum(x.get("replayed_cost", 0.0) for x in c)) for c in calls]
        provider_cached = [sum(x.get("provider_cached_tokens", 0) for x in c) for c in calls]
        latency = [float(_call_sum(c, "latency_s")) for c in calls]
        replays = [sum(1 for x in c if x["suite_replay"]) if c else 0 for c in calls]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ColabkitError(f"malformed event log {path}: {type(exc).__name__}: "
                           f"{one_line(exc)}") from None
    cols["session_id"] += [sid] * n
    cols["event_id"] += [f"{sid}-{seq:05d}" for seq in seqs]
    cols["seq"] += seqs
    cols["schema_version"] += [ev.get("schema_version", 1) for ev in events]  # absent: written by version 1
    cols["task_id"] += [task_id] * n
    cols["variant"] += [variant] * n
    cols["seed"] += [seed] * n
    for field in _EVENT_FIELDS:
        cols[field] += [ev.get(field) for ev in events]
    cols["gate_scope"] += [gate.get("scope") for gate in gates]
    cols["gate_note"] += [gate.get("note") for gate in gates]
    cols["gate_signatory"] += [gate.get("signatory") for gate in gates]
    cols["args_json"] += [_json(ev.get("args") or {}) for ev in events]
    cols["prompt_hashes"] += [";".join(x.get("prompt_hash") or "" for x in c) if c else "" for c in calls]
    # Who acted: a person in a seat (the event carries `person`), a model, or the session itself.
    cols["actor_kind"] += ["system" if ev["participant"] == "system" else "person" if ev.get("person") else "model"
                           for ev in events]
    cols["output_modes"] += [";".join(x.get("output_mode") or "" for x in c) if c else "" for c in calls]
    cols["n_calls"] += [len(c) for c in calls]
    cols["prompt_tokens"] += prompt
    cols["completion_tokens"] += completion
    cols["tokens"] += [p + c for p, c in zip(prompt, completion, strict=True)]
    cols["provider_cached_tokens"] += provider_cached
    cols["cost"] += cost
    cols["replayed_cost"] += replayed
    cols["latency_s"] += latency
    cols["suite_replays"] += replays
    cols["llm_errors"] += [sum(1 for x in c if x.get("error")) if c else 0 for c in calls]


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
                   | {"time": "float64", "cost": "float64", "replayed_cost": "float64", "latency_s": "float64"})
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
    (n_calls, prompt_tokens, completion_tokens, tokens, provider_cached_tokens, cost (paid
    in the run that wrote it), replayed_cost, latency_s, suite_replays, llm_errors; older
    logs are read into these names), their `prompt_hashes` (";"-joined, keys into `prompts.jsonl`) and their
    `output_modes` (";"-joined: how each call asked for its format, see `colabkit.llm.gateway`).
    """
    return _load(out, EVENTS_PARQUET, session_ids, events=True)


def load_sessions(out: Path | str, session_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per finished session under `out` (or of `session_ids`), sorted by session id.

    Columns: factors (task, variant and its parts, seed, model, the observation profile's
    name and the context window it came from), settings, outcome
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
