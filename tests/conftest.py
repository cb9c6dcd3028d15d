"""Suite-wide test setup: offline litellm, importable helpers, the socket guard fixture.

`LITELLM_LOCAL_MODEL_COST_MAP` is set before anything can import litellm, so no test
fetches the price table from the network.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import pytest  # noqa: E402
from helpers.netguard import install_socket_guard  # noqa: E402


@pytest.fixture
def socket_guard(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every TCP/UDP connect and name lookup raises; the returned list records the attempts."""
    return install_socket_guard(monkeypatch.setattr)


def pytest_configure(config: pytest.Config) -> None:
    # pytest resets warning filters per test, so colabkit's own filter for litellm's
    # pydantic ReadOnly warnings (see colabkit.llm.providers) is repeated here.
    config.addinivalue_line("filterwarnings",
                            "ignore:.*using the `ReadOnly` qualifier:UserWarning")
