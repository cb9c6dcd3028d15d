"""End to end with the real embedded model (`local/smollm2-135m`): a Scaffolded-DR session (its
memory build phase and a round) writes a valid trajectory. The other variants and `colabkit
run` are tests/test_e2e_real_model.py's; this one, the longest, has a file of its own so the
test workers (a file each) share the model's minutes evenly.
"""

from __future__ import annotations

import pytest
from helpers.embedded_sessions import embedded_session_is_valid

# heavy: make test keeps the Single and Default-DR sessions on the embedded model
# (tests/test_e2e_real_model.py); CI runs this one too
pytestmark = [pytest.mark.slow, pytest.mark.heavy]


def test_a_scaffolded_session_with_the_embedded_model_writes_a_valid_trajectory(tmp_path_factory, tmp_path):
    # low budgets: the build phase alone is up to seven model answers (three proposals, a
    # consolidation, two ratifications, one amending)
    record = embedded_session_is_valid(tmp_path_factory, tmp_path, "scaffolded-dr", 3, 1)
    assert record.spec.variant.name == "scaffolded-dr" and record.memory is not None  # the build phase ran
