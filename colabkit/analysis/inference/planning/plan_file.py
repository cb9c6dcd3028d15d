"""The plan on disk: written before the data, bound to the sessions, amended in versions.

A pre-registration is only worth its time stamp, and a time stamp in a file anyone can edit is
worth nothing: the lock is the sessions' own record. Every session, when it *starts*, appends
the hash of the plan then in force to the experiment's ledger (`colabkit.store.records.
PLAN_LEDGER`), and its `session.json` keeps it. So:

- **the plan in force is the one the sessions recorded**, from the first session started;
- `write_plan` refuses to replace it once any session has started (`PlanLocked`, one line
  naming the locked plan's hash), whatever the target: `--out` into the experiment's folder,
  a deleted plan file, or a folder whose plan was removed (the ledger still names it);
- a change after that is an **amendment**: a new version (`analysis_plan.v2.json`, ...) with its
  reason, time and the hash it amends, beside the original, which must still be there;
- `read_plan` / `plan_for` **refuse** a plan the sessions' record does not support: a newest
  version whose hash no session recorded unless it amends, version by version, one they did;
  a recorded hash with no file; a file edited by hand (its hash recomputed or not).

The status every table carries (`plan_status`) says which version, and whether it predates
the data, from the ledger (the first started session recorded it), never from the file's own
`sessions_at_writing`; with no file and no recorded plan, the default plan, labelled "no plan".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, NO_PLAN, PLAN_FILE, AnalysisPlan, analysis_plan
from colabkit.errors import ColabkitError
from colabkit.store.atomic import atomic_write_text
from colabkit.store.layout import SESSION_FILE
from colabkit.store.records import PLAN_LEDGER

VERSION_PATTERN = re.compile(r"^analysis_plan(?:\.v(\d+))?\.json$")


class PlanLocked(ColabkitError):
    """A plan exists and sessions are stored: it can only be amended (a new version)."""


def stored_sessions(folder: Path) -> int:
    """Finished sessions in an experiment's folder (a `session.json` marks one finished)."""
    return sum(1 for _ in folder.glob(f"*/{SESSION_FILE}")) if folder.is_dir() else 0


def session_starts(folder: Path) -> list[dict]:
    """Every session start the folder records, in order: the ledger's lines, then finished
    sessions the ledger lacks (records written before it existed), each {session_id,
    plan_hash, started}."""
    starts: list[dict] = []
    ledger = folder / PLAN_LEDGER
    if ledger.is_file():
        for line in ledger.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and "session_id" in entry:
                starts.append(entry)
    known = {entry["session_id"] for entry in starts}
    for path in sorted(folder.glob(f"*/{SESSION_FILE}")) if folder.is_dir() else ():
        if path.parent.name in known:
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = {}
        record = record if isinstance(record, dict) else {}
        starts.append({"session_id": path.parent.name, "plan_hash": record.get("analysis_plan"),
                       "started": str(record.get("started", ""))})
    return starts


class SessionsRecord:
    """What the sessions recorded about the plan (`session_starts`): how many started, the
    hashes they recorded, and the plan they locked (the first started session's)."""

    def __init__(self, folder: Path) -> None:
        self.starts = session_starts(folder)
        self.hashes = {str(e["plan_hash"]) for e in self.starts if e.get("plan_hash")}
        first = next((e for e in self.starts if e.get("plan_hash")), None)
        self.locked = str(first["plan_hash"]) if first else None
        self.locked_at = str(first.get("started", "")) if first else ""
        self.first_started = self.starts[0] if self.starts else None

    def line(self) -> str:
        """The locked plan in one line."""
        using = sum(1 for e in self.starts if e.get("plan_hash") == self.locked)
        return (f"analysis plan {self.locked} is locked: {len(self.starts)} session(s) started, {using} under it "
                f"(the first at {self.locked_at})")


def plan_versions(folder: Path) -> dict[int, Path]:
    """The plan files of `folder` by version (the first is `analysis_plan.json`, version 1)."""
    found = {}
    for path in folder.glob("analysis_plan*.json") if folder.is_dir() else ():
        match = VERSION_PATTERN.match(path.name)
        if match:
            found[int(match.group(1) or 1)] = path
    return dict(sorted(found.items()))


def _version_file(folder: Path, version: int) -> Path:
    return folder / (PLAN_FILE if version == 1 else f"analysis_plan.v{version}.json")


def plan_document(plan: AnalysisPlan, version: int = 1, sessions: int = 0, reason: str = "",
                  amends: str | None = None) -> str:
    """A plan file's text: the plan, its hash, version, time stamp, sessions stored at writing."""
    return json.dumps({"plan": plan.model_dump(mode="json"), "plan_hash": plan.plan_hash, "version": version,
                       "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
                       "sessions_at_writing": sessions, "amends": amends, "reason": reason}, indent=1) + "\n"


def write_plan(folder: Path, plan: AnalysisPlan, amend: str | None = None, target: Path | None = None) -> Path:
    """Write `plan` for the experiment in `folder` (module docstring); the path written.

    Without `amend`: the first version, or a replacement while no session has started; once
    one has, `PlanLocked`. With `amend` (the reason): the next version, beside the original.
    `target`: a copy elsewhere; a plan file's name in the experiment's folder, or in any folder
    where sessions started, is that folder's record, and the lock applies.
    """
    if target is not None:
        home = target.resolve().parent
        if VERSION_PATTERN.match(target.name) and (home == folder.resolve() or session_starts(home)):
            return write_plan(home, plan, amend)  # a plan file of an experiment's record: the lock applies
        atomic_write_text(target, plan_document(plan, 1, 0))  # a copy outside any experiment's record
        return target
    record, versions = SessionsRecord(folder), plan_versions(folder)
    started = len(record.starts)
    if amend is not None:
        if not amend.strip():
            raise ColabkitError("an amendment needs its reason (--amend REASON)")
        if not versions:
            if record.locked:
                raise PlanLocked(f"{record.line()}; its file is missing from {folder}: restore it, then amend it")
            raise ColabkitError(f"no analysis plan in {folder} to amend: write the first one without --amend")
        latest = max(versions)
        previous = _read_document(versions[latest])
        path = _version_file(folder, latest + 1)
        atomic_write_text(path, plan_document(plan, latest + 1, started, amend.strip(), previous.get("plan_hash")))
        return path
    if record.locked:
        raise PlanLocked(f"{record.line()}; amend it with --amend REASON (a new version beside it)")
    if versions and started:
        raise PlanLocked(f"analysis plan {versions[max(versions)]} is locked: {started} session(s) started; "
                         "amend it with --amend REASON (a new version beside it)")
    for path in versions.values():  # no session yet: the plan may still change, as one version
        path.unlink()
    path = _version_file(folder, 1)
    atomic_write_text(path, plan_document(plan, 1, started))
    return path


def _read_document(path: Path) -> dict:
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        return document
    except (OSError, ValueError) as exc:
        raise ColabkitError(f"cannot read the analysis plan {path}: {' '.join(str(exc).split())}") from None


def _checked(path: Path) -> tuple[AnalysisPlan, dict]:
    """The plan in one file, its hash checked against its content."""
    document = _read_document(path)
    body = document.get("plan")
    if not isinstance(body, dict) or body.get("schema_version") != 2:
        raise ColabkitError(f"analysis plan {path} has an older schema (gates, no hypotheses): write it again with "
                            "`colabkit plan-analysis`, or amend it with --amend REASON if sessions exist")
    try:
        plan = AnalysisPlan.model_validate(document["plan"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ColabkitError(f"cannot read the analysis plan {path}: {' '.join(str(exc).split())}") from None
    if document.get("plan_hash") != plan.plan_hash:
        raise ColabkitError(f"analysis plan {path} was edited after it was written (hash "
                            f"{document.get('plan_hash')} != {plan.plan_hash}): write it again with plan-analysis")
    return plan, document


def read_plan(path: Path | str) -> AnalysisPlan:
    """The plan in a plan file (or the newest version in the folder holding it), hash checked,
    checked against the sessions' record when it is an experiment's (module docstring),
    labelled with its status."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    versions = plan_versions(folder)
    if path.is_dir():
        path = versions[max(versions)] if versions else path / PLAN_FILE
    plan, document = _checked(path)
    if not VERSION_PATTERN.match(path.name):
        return plan.with_status(_status(document, None))
    record = SessionsRecord(folder)
    chain = _amendment_chain(versions, path)
    if record.locked:
        hashes = [d["plan_hash"] for d in chain]
        if record.locked not in hashes:
            raise ColabkitError(f"{record.line()}, but {path} ({plan.plan_hash}) is not it nor an amendment of it: "
                                "restore the locked plan, or amend it with --amend REASON")
        stray = sorted(record.hashes - {d["plan_hash"] for d in map(_read_document, versions.values())})
        if stray:
            raise ColabkitError(f"{record.line()}; sessions also recorded plan(s) {', '.join(stray)} that no version in "
                                f"{folder} holds: a version was replaced or removed")
    return plan.with_status(_status(document, record))


def _amendment_chain(versions: dict[int, Path], path: Path) -> list[dict]:
    """The documents from version 1 to `path`'s, each amending the one before (with a
    reason and a time), or fail naming the break."""
    match = VERSION_PATTERN.match(path.name)
    last = int(match.group(1) or 1) if match else 1
    chain: list[dict] = []
    for version in range(1, last + 1):
        if version not in versions:
            raise ColabkitError(f"analysis plan version {version} is missing beside {path}: every version is kept")
        _, document = _checked(versions[version])
        if version > 1 and (document.get("amends") != chain[-1]["plan_hash"] or not document.get("reason")
                            or not document.get("written_at")):
            raise ColabkitError(f"analysis plan {versions[version]} does not amend version {version - 1} "
                                f"({chain[-1]['plan_hash']}) with a reason and a time")
        chain.append(document)
    return chain


def _status(document: dict, record: SessionsRecord | None) -> str:
    text = f"plan v{document.get('version', 1)} {document['plan_hash']}, written {document.get('written_at', '?')}"
    if record is None:
        when = "a copy outside an experiment's folder (not checked against sessions)"
    elif not record.starts:
        when = "before the first session (none started yet): predates the data"
    elif record.locked is None:
        when = (f"written after {document.get('sessions_at_writing', '?')} session(s) had started without a plan: "
                "does not predate the data")
    elif record.locked == document["plan_hash"] and record.first_started is not None \
            and record.first_started.get("plan_hash") == record.locked:
        using = sum(1 for e in record.starts if e.get("plan_hash") == record.locked)
        when = (f"before the first session: recorded by {using} of {len(record.starts)} session(s) from the first "
                "started, predates the data")
    elif record.locked == document["plan_hash"]:
        when = (f"first recorded at {record.locked_at}, after sessions had started without a plan: "
                "does not predate the data")
    else:
        when = f"written after {document.get('sessions_at_writing', '?')} session(s) had started: an amendment, " \
               "does not predate the data"
    text += f", {when}"
    if document.get("amends"):
        text += f"; amends {document['amends']}: {document.get('reason', '')}"
    return text


def plan_for(folder: Path | str, variants: Sequence[str] | None = None) -> tuple[AnalysisPlan, str]:
    """The newest plan an experiment's folder holds, else the default plan for its planned
    `variants` (every variant when None) labelled "no plan"; with a line saying which."""
    folder = Path(folder)
    if plan_versions(folder):
        plan = read_plan(folder)
        return plan, plan.status
    record = SessionsRecord(folder)
    if record.locked:
        raise ColabkitError(f"{record.line()}, but no plan file is in {folder}: restore it (deleting the plan does "
                            "not release it)")
    plan = analysis_plan(tuple(variants) if variants is not None else ALL_VARIANTS)
    return plan, (f"{NO_PLAN} in {folder}: computed under the default plan {plan.plan_hash} for the planned "
                  "variants (write one before the data with `colabkit plan-analysis CONFIG`)")
