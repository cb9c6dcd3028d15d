"""From names to a runnable session: what the CLI, the notebooks and batches share.

Entry points speak in names (a task id, a variant name, model strings per role); the
recorder takes typed values. Resolving them in one place keeps every entry point's session
identity the same for the same request (so a notebook rerun finds what the CLI or a batch
stored), and gives one set of one-line errors for bad names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.structure.registry import structures_for
from colabkit.tasks import Task, TaskSuite, load_tasks
from colabkit.team import VariantConfig
from colabkit.team import variant as variant_config

ModelSpec = str | ModelConfig | Mapping[str, Any]


def model_config(value: ModelSpec) -> ModelConfig:
    """A model string, a `ModelConfig` or its fields as a mapping, as a `ModelConfig`."""
    if isinstance(value, ModelConfig):
        return value
    if isinstance(value, str):
        return ModelConfig(model=value)
    return ModelConfig.model_validate(dict(value))


def build_spec(
    task_id: str,
    variant: str | VariantConfig,
    seed: int,
    *,
    models: Mapping[str, ModelSpec] | None = None,
    settings: SessionSettings | None = None,
) -> SessionSpec:
    """The `SessionSpec` for names; `models` maps roles ("default", "ai", "D", "R") to models.

    The spec always names a "default" model (the embedded one unless given), so omitting
    it and passing the default string yield the same session. Roles the variant's team does
    not have are dropped, so one experiment-wide model map gives each variant the same
    session as a map naming only its own roles. `variant` is a registered name or a config
    (an inline variant of an experiment or a variant file, `colabkit.team.declare`).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ColabkitError(f"seed must be a non-negative integer, got {seed!r}")
    config = variant if isinstance(variant, VariantConfig) else variant_config(variant)
    structures_for(config)  # its plugin structures found and their options checked, before anything runs
    given = {role: model_config(m) for role, m in (models or {}).items()}
    resolved = {"default": given.pop("default", ModelConfig())}
    resolved.update({role: m for role, m in given.items() if role in ("ai", *config.humans)})
    return SessionSpec(task_id=task_id, variant=config, seed=seed, models=resolved,
                       settings=settings or SessionSettings())


def build_session(
    task_id: str,
    variant: str | VariantConfig,
    seed: int,
    *,
    model: str | None = None,
    data_root: Path | str | None = None,
    settings: SessionSettings | None = None,
    suite: TaskSuite | None = None,
) -> tuple[SessionSpec, Task]:
    """Resolve names into a `SessionSpec` and its `Task`.

    `model` (default: the embedded model) is used by every role; `data_root=None` means the
    shipped demo tasks (`suite`, if given, is used instead of loading the tasks again).
    """
    spec = build_spec(task_id, variant, seed, models={"default": model} if model else None, settings=settings)
    try:
        task = (suite or load_tasks(data_root)).get(task_id)  # the whole suite: an unknown id lists near ones
    except ColabkitError as exc:
        if suite is None and data_root is None:  # the demo tasks: a DiscoveryBench id needs its data
            raise ColabkitError(f"{exc}; these are the demo tasks (no --data-root): for a DiscoveryBench task "
                                "such as archaeology/3/0 pass --data-root DIR (a clone of "
                                "https://github.com/allenai/discoverybench)") from None
        raise
    return spec, task
