"""From names to a runnable session: what the CLI, the demo and the notebook share.

Entry points speak in names (a task id, a variant name, a model string); `record_session`
takes typed values. Resolving them in one place keeps every entry point's session identity
the same for the same request (so a notebook rerun finds what the CLI stored), and gives
one set of one-line errors for bad names.
"""

from __future__ import annotations

from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.session import SessionSettings, SessionSpec
from colabkit.tasks import Task, load_tasks
from colabkit.team import variant as variant_config


def build_session(
    task_id: str,
    variant: str,
    seed: int,
    *,
    model: str | None = None,
    data_root: Path | str | None = None,
    settings: SessionSettings | None = None,
) -> tuple[SessionSpec, Task]:
    """Resolve names into a `SessionSpec` and its `Task`.

    `model` (default: the embedded model) is used by every role; `data_root=None` means the
    shipped demo tasks. The spec always names the model under "default", whether given or
    not, so omitting `model` and passing the default string yield the same session.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ColabkitError(f"seed must be a non-negative integer, got {seed!r}")
    config = variant_config(variant)
    task = load_tasks(data_root).get(task_id)  # the whole suite, so an unknown id lists near ones
    models = {"default": ModelConfig(model=model) if model else ModelConfig()}
    spec = SessionSpec(
        task_id=task.id, variant=config, seed=seed, models=models, settings=settings or SessionSettings()
    )
    return spec, task
