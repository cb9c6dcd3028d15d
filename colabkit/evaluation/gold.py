"""Gold hypotheses for an explicit export request (`colabkit export --with-gold`).

Gold answers never reach a participant; only this layer reads them. A researcher who exports
trajectories to another viewer may ask for the gold hypothesis as each sample's target, as
`colabkit tasks show --with-gold` shows it; this is the one call that hands them over.
"""

from __future__ import annotations

from collections.abc import Iterable

from colabkit.tasks import TaskSuite


def gold_hypotheses(suite: TaskSuite, task_ids: Iterable[str]) -> dict[str, str]:
    """The gold hypothesis of each of `task_ids` the suite has one for (others are absent)."""
    found = {}
    for task_id in dict.fromkeys(task_ids):
        gold = suite.gold_for(task_id) if task_id in suite.ids else None
        if gold is not None:
            found[task_id] = gold.hypothesis
    return found
