"""Suite-wide test setup: offline litellm, importable helpers, the socket guard fixture.

`LITELLM_LOCAL_MODEL_COST_MAP` is set before anything can import litellm, so no test
fetches the price table from the network.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import pytest  # noqa: E402
from helpers.env import require  # noqa: E402
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The slow files first: the test workers (pytest-xdist, a file at a time) then end together
    # instead of one worker starting the longest file when the other is nearly done.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _find_chromium() -> str | None:
    explicit = os.environ.get("COLABKIT_CHROMIUM")
    return explicit if explicit and Path(explicit).is_file() else shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium for the browser tests (playwright drives it by path; never `playwright
    install`, which downloads a browser): installed with apt-get when missing and run as root."""
    path = _find_chromium()
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        # Test workers (pytest-xdist) may get here at once: one installs, the others wait and find it.
        with open(Path(tempfile.gettempdir()) / "colabkit-tests-chromium.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = _find_chromium()
            if path is None:
                env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
                subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True, timeout=600)
                subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, check=False,
                               capture_output=True, timeout=1200)
                path = _find_chromium()
    require(path is not None, "no chromium: apt-get install chromium (as root), or set COLABKIT_CHROMIUM")
    assert path is not None
    return path
