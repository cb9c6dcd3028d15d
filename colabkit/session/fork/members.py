"""The team-changing forks of issue 47: an empty seat, and the structure switched off.

Both act through the replay hook (`replay.ForkReplay`), never through a branch of the engine
for a structure or a member: the engine asks its hook whether a participant is seated
(`ReplayHook.seated`) before it asks that participant anything, and the hook may replace the
session's variant and structures at its fork point (`hooks.SessionState`), as it replaces
the spec or the memory for the other changes.

- `remove_member`: from N the member is not seated. The engine skips its turns, its closing
  pass decisions and its at-once decisions; a request addressed to it stays pending and
  expires at the end, as a silent signatory's does. Nothing else is touched: messages may
  still be addressed to it, and its teammates still see it listed on the team (an empty
  seat, not a smaller team), so the continuation differs from its control only by the
  member's steps from N and what follows from their absence.
- `structure_off`: from N the variant is its Default twin (`default_twin`) and the engine
  plays the twin's composition (no sections, actions or holds of a structure). The rule
  for what was open at N: every held request not yet in effect expires at N, logged as the
  end logs an undecided request (`request_expired`, with `switched_off`), and a living
  memory's open updates expire the way the structure itself expires them. Nothing held
  takes effect after the structure that held it is gone; the proposer sees the expiry and
  may do it again, now ungated.
"""

from __future__ import annotations

from typing import cast

from colabkit.session.events import SYSTEM
from colabkit.session.hooks import SessionState
from colabkit.session.structure.base import Context
from colabkit.session.structure.gating import Request
from colabkit.session.structure.registry import composition
from colabkit.team import VARIANTS, VariantConfig

SWITCHED_OFF = "switched_off"
"""The `request_expired` argument marking a request expired by `structure_off` at N."""


def default_twin(variant: VariantConfig) -> VariantConfig:
    """`variant` without its coordination structures: the same seats and personas, no memory,
    no gates, no living memory, no plugins. A study variant's twin is the registered Default
    of its composition (`preassigned-dr` -> `default-dr`, the same identity); any other keeps
    its name with `-off` appended, so a table never mistakes it for a registered variant."""
    bare = variant.model_copy(update={"memory": False, "gate_source": "none", "preassigned": None,
                                      "memory_updates": False, "structures": ()})
    family, _, suffix = variant.name.partition("-")
    registered = VARIANTS.get(f"default-{suffix}")
    if family in {"scaffolded", "memory", "preassigned", "dynamic", "default"} and registered is not None \
            and registered.model_copy(update={"name": bare.name}) == bare:
        return registered
    return VariantConfig.model_validate({**bare.model_dump(), "name": f"{variant.name}-off"})


def switch_off(session: SessionState, at: int) -> VariantConfig:
    """Put `session`'s Default twin in force at N (module docstring); return the twin."""
    # The engine's session is the structures' `Context` too; the hook's protocol names only what it changes.
    expired: list[object] = [*session.structure.expire(cast(Context, session))]
    held = [r for r in session.requests.requests.values() if r.status in ("pending", "approved") and not r.applied]
    for request in held:
        request.status = "expired"
    for request in (r for r in [*expired, *held] if isinstance(r, Request)):
        session.emit(SYSTEM, "request_expired", "info", request_id=request.request_id, signatory=request.signatory,
                     proposer=request.proposer, args={"action": request.action.type, "decision": "undecided",
                                                      SWITCHED_OFF: at},
                     result=f"{request.request_id} ({request.action.type} by {request.proposer}) undecided: "
                            f"the structure was switched off at event {at}")
    twin = default_twin(session.variant)
    session.variant = twin
    session.structure = composition(twin)
    return twin
