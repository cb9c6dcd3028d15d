"""What a seat session is: the task, the variant, who the persons are, and where it is stored.

A `SeatPlan` is the whole request, in names (JSON-able, so a participant page's parameters,
the CLI's flags and the session host all carry the same one). Every page of a session
(one per person) builds the same plan, hence the same `SessionSpec` and session id; the
session host (`colabkit.seat.host`) is found by that id: its socket and lock live in a
private folder named by a hash of the results folder and the session id.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.runner import build_spec
from colabkit.runner.build import ModelSpec, model_config
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.seats.person import Fallback, SeatTerms, person_model
from colabkit.store import session_dir
from colabkit.team import variant as variant_config

IDLE_EXIT_S = 300.0
"""How long a session host waits with no page open before it stops (a few minutes: the host
holds the session's kernel and models; the next visit replays the stored answers)."""


def persons_spec(task_id: str, variant: str, seed: int, persons: Mapping[str, str], *,
                 models: Mapping[str, ModelSpec] | str | None = None, timeout_s: float | None = None,
                 fallback: Fallback = "wait", settings: SessionSettings | None = None) -> SessionSpec:
    """The spec of a session whose `persons` ({seat: participant id}) are people, in any seat of the
    variant's team: D or R, or the AI agent's (`ai`: a lab pilots its prompts by hand, a human-AI
    study swaps the roles); the other seats stay models.

    `models` maps roles to models as everywhere (a string: every role's). A seat's own
    entry (else the default) is its persona's model: it sizes the observation profile, so
    the person sees what the simulated persona would have, and takes timed-out steps under
    `fallback="model"`.
    """
    config = variant_config(variant)
    if not persons:
        raise ColabkitError("a seat session needs at least one person (a seat of the team: ai, D or R)")
    given: dict[str, ModelSpec] = {"default": models} if isinstance(models, str) else dict(models or {})
    seated: dict[str, ModelSpec] = {}
    for seat, participant_id in persons.items():
        if seat not in config.team:
            raise ColabkitError(f"seat {seat!r} is not a seat of {variant}: a person plays one of "
                                f"{', '.join(config.team)}")
        persona = model_config(given.get(seat) or given.get("default") or ModelConfig())
        try:
            terms = SeatTerms(participant_id=participant_id, timeout_s=timeout_s, fallback=fallback,
                              persona_model=persona)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ColabkitError(f"seat {'.'.join(map(str, error['loc']))}: {error['msg']} "
                                f"(got {error.get('input')!r})") from None
        seated[seat] = person_model(terms)
    return build_spec(task_id, variant, seed, models={**given, **seated}, settings=settings)


def seat_spec(task_id: str, variant: str, seat: str, seed: int, *, participant_id: str,
              models: Mapping[str, ModelSpec] | str | None = None, timeout_s: float | None = None,
              fallback: Fallback = "wait", settings: SessionSettings | None = None) -> SessionSpec:
    """`persons_spec` with one person, in `seat`."""
    return persons_spec(task_id, variant, seed, {seat: participant_id}, models=models, timeout_s=timeout_s,
                        fallback=fallback, settings=settings)


class SeatPlan(BaseModel):
    """One seat session, in names: what every page of it and its host agree on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    variant: str
    seed: int = Field(default=0, ge=0)
    persons: dict[str, str]
    models: dict[str, Any] | str | None = None
    timeout_s: float | None = None
    fallback: Fallback = "wait"
    settings: dict[str, Any] = Field(default_factory=dict)
    data_root: str | None = None
    out: str
    idle_exit_s: float = Field(default=IDLE_EXIT_S, gt=0)
    """The host stops after this long with no page connected; a later visit starts a new one,
    which replays the person's stored answers and carries on."""

    def session_settings(self) -> SessionSettings:
        return SessionSettings(**{k: v for k, v in self.settings.items() if v is not None})

    def spec(self) -> SessionSpec:
        return persons_spec(self.task, self.variant, self.seed, self.persons, models=self.models,
                            timeout_s=self.timeout_s, fallback=self.fallback, settings=self.session_settings())

    def folder(self) -> Path:
        """Where the session is stored."""
        return session_dir(self.spec(), self.out)

    def runtime_dir(self) -> Path:
        """The host's private folder (socket, lock, pid, log): short, for the socket path limit."""
        key = sha256_hex({"out": str(Path(self.out).resolve()), "session": self.spec().session_id})[:16]
        folder = Path(tempfile.gettempdir()) / f"colabkit-seat-{key}"
        folder.mkdir(mode=0o700, exist_ok=True)
        stat = folder.stat()
        if stat.st_uid != os.getuid() or stat.st_mode & 0o077:  # the channel trusts what it reads there
            raise ColabkitError(f"{folder} is not a private folder of this user: remove it and try again")
        return folder
