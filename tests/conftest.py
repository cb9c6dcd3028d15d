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
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import pytest  # noqa: E402
from helpers.env import require  # noqa: E402
from helpers.netguard import install_socket_guard  # noqa: E402
from helpers.schedule import LONGEST_FIRST, SHARED_UNITS, unit_of  # noqa: E402


@pytest.fixture
def socket_guard(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every TCP/UDP connect and name lookup raises; the returned list records the attempts."""
    return install_socket_guard(monkeypatch.setattr)


def pytest_configure(config: pytest.Config) -> None:
    # pytest resets warning filters per test, so colabkit's own filter for litellm's
    # pydantic ReadOnly warnings (see colabkit.llm.providers) is repeated here.
    config.addinivalue_line("filterwarnings",
                            "ignore:.*using the `ReadOnly` qualifier:UserWarning")
    # Here, not in pyproject.toml: its hash is the environment's stamp (a change there reinstalls .venv).
    config.addinivalue_line("markers", "heavy: a further case of a process or real-model proof whose representative "
                            "case make test runs; left out of make test, run by make test-all and CI (.ci/run)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # helpers.schedule's order: the longest units first, then files with slow tests, then the rest.
    slow_units = {unit_of(item.path.name) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        unit = unit_of(item.path.name)
        if unit in LONGEST_FIRST:
            return LONGEST_FIRST.index(unit)
        return len(LONGEST_FIRST) + (unit not in slow_units)

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadfile`, a file's tests go to one worker (its module fixtures are built
    once), and the files of a shared unit too. (xdist's `--dist loadgroup` cannot do it here:
    it renames test ids in a way pytest 9 ignores.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return SHARED_UNITS.get(Path(file).name, file)  # helpers.schedule's units

    return UnitScheduling(config, log)


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
