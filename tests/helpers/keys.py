"""Placeholder provider keys for tests that plan (never run) the shipped experiments.

`colabkit batch --dry-run` preflights every model and the judge (a missing key is exit 2), so
a test that plans `experiments/paper.yaml` and its siblings sets a key for each of their
providers. Nothing is sent: a dry run makes no model call.
"""

from __future__ import annotations

from typing import Any

PROVIDER_KEYS = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def placeholder_keys(monkeypatch: Any) -> None:
    """Set each shipped experiment's provider key (unless set) for this test only."""
    import os

    for name in PROVIDER_KEYS:
        if not os.environ.get(name):
            monkeypatch.setenv(name, "sk-placeholder-never-sent")
