"""The plan on disk: written before the data, locked once a session exists, amended in versions.

A pre-registration is only worth its time stamp. `write_plan` records, beside the plan and its
hash, when it was written (UTC) and how many finished sessions the experiment's folder held
then; once any session exists it refuses to replace the plan (`PlanLocked`). A change after
that is an amendment: a new version (`analysis_plan.v2.json`, ...) with its reason and the
hash it amends, every earlier version kept. `plan_for` reads the newest version and labels
the plan with its status (version, written before or after the first session), which every
table carries (`plan_status`); with no file, the default plan, labelled "no plan".
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

VERSION_PATTERN = re.compile(r"^analysis_plan(?:\.v(\d+))?\.json$")


class PlanLocked(ColabkitError):
    """A plan exists and sessions are stored: it can only be amended (a new version)."""


def stored_sessions(folder: Path) -> int:
    """Finished sessions in an experiment's folder (a `session.json` marks one finished)."""
    return sum(1 for _ in folder.glob(f"*/{SESSION_FILE}")) if folder.is_dir() else 0


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

    Without `amend`: the first version, or a replacement while no session is stored; with
    sessions stored, `PlanLocked`. With `amend` (the reason): the next version.
    """
    sessions, versions = stored_sessions(folder), plan_versions(folder)
    if target is not None:  # an explicit file (not the experiment's record): written as version 1
        atomic_write_text(target, plan_document(plan, 1, sessions))
        return target
    if amend is not None:
        if not amend.strip():
            raise ColabkitError("an amendment needs its reason (--amend REASON)")
        if not versions:
            raise ColabkitError(f"no analysis plan in {folder} to amend: write the first one without --amend")
        latest = max(versions)
        previous = _read_document(versions[latest])
        path = _version_file(folder, latest + 1)
        atomic_write_text(path, plan_document(plan, latest + 1, sessions, amend.strip(), previous.get("plan_hash")))
        return path
    if versions and sessions:
        raise PlanLocked(f"analysis plan {versions[max(versions)]} is locked: {sessions} session(s) are stored; "
                         "amend it with --amend REASON (a new version, both kept)")
    for path in versions.values():  # no session yet: the plan may still change, as one version
        path.unlink()
    path = _version_file(folder, 1)
    atomic_write_text(path, plan_document(plan, 1, sessions))
    return path


def _read_document(path: Path) -> dict:
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        return document
    except (OSError, ValueError) as exc:
        raise ColabkitError(f"cannot read the analysis plan {path}: {' '.join(str(exc).split())}") from None


def read_plan(path: Path | str) -> AnalysisPlan:
    """The plan in a plan file (or the newest version in the folder holding it), hash checked,
    labelled with its status."""
    path = Path(path)
    if path.is_dir():
        versions = plan_versions(path)
        path = versions[max(versions)] if versions else path / PLAN_FILE
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
    return plan.with_status(_status(document))


def _status(document: dict) -> str:
    sessions = int(document.get("sessions_at_writing", 0) or 0)
    when = "before the first session" if sessions == 0 else f"after {sessions} session(s) were stored"
    text = f"plan v{document.get('version', 1)} {document['plan_hash']}, written {document.get('written_at', '?')}, {when}"
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
    plan = analysis_plan(tuple(variants) if variants is not None else ALL_VARIANTS)
    return plan, (f"{NO_PLAN} in {folder}: computed under the default plan {plan.plan_hash} for the planned "
                  "variants (write one before the data with `colabkit plan-analysis CONFIG`)")
