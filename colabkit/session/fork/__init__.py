"""Counterfactual forks inside the session layer: typed changes, the fork record, the replay hook.

`changes` says what a fork may change at event N and how a continuation is recorded;
`replay` is the hook the engine calls (`run_session(..., fork=ForkReplay(...))`). Running a
fork into the store (the parent's cache, verification, folders) is the runner's job
(`colabkit.runner.fork`).
"""

from colabkit.session.fork.changes import (
    CHANGE_KINDS,
    STEP_CHANGES,
    AmendMemory,
    CellMismatch,
    Change,
    DropMessage,
    FlipDecision,
    ForkPoint,
    ForkRecord,
    InsertMessage,
    NoChange,
    RemoveMember,
    ReplaceMessage,
    ReplayReport,
    SetModel,
    SetPersona,
    StructureOff,
    VerifyMode,
    check_fork,
    describe,
    fork_points,
    seat_map,
)
from colabkit.session.fork.members import default_twin
from colabkit.session.fork.replay import ForkDivergence, ForkReplay, normalise, replay_view

__all__ = [
    "CHANGE_KINDS",
    "STEP_CHANGES",
    "AmendMemory",
    "CellMismatch",
    "Change",
    "DropMessage",
    "FlipDecision",
    "ForkDivergence",
    "ForkPoint",
    "ForkRecord",
    "ForkReplay",
    "InsertMessage",
    "NoChange",
    "RemoveMember",
    "ReplaceMessage",
    "ReplayReport",
    "SetModel",
    "SetPersona",
    "StructureOff",
    "VerifyMode",
    "check_fork",
    "default_twin",
    "describe",
    "fork_points",
    "normalise",
    "replay_view",
    "seat_map",
]
