"""Import hygiene: `colabkit.llm` and a call to the embedded model stay off the network,
print nothing on stdout, and leave nothing in $HOME.

Runs in a fresh interpreter because an import can only be observed once per process; the
socket guard is installed there before anything else is imported.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

SCRIPT = """
import json, sys
from helpers.netguard import install_socket_guard
attempts = install_socket_guard()
import os, asyncio
import colabkit.llm as llm
env_flag = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")
lazy = "litellm" not in sys.modules and "llama_cpp" not in sys.modules
gateway = llm.Gateway()
config = llm.ModelConfig(max_tokens=8, temperature=0.0)
text, record = asyncio.run(gateway.complete(config, [{"role": "user", "content": "Say hi."}],
                                            caller="ai"))
print(json.dumps({"attempts": attempts, "env_flag": env_flag, "lazy": lazy, "text": text,
                  "cost": record.cost, "tokens": record.completion_tokens}))
"""


@pytest.mark.slow
def test_import_and_local_call_make_no_network_attempt_and_no_noise(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LITELLM", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=str(TESTS_DIR))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, f"unexpected stdout: {done.stdout!r}"
    result = json.loads(lines[0])
    assert result["attempts"] == []
    assert result["env_flag"] == "True"
    assert result["lazy"], "importing colabkit.llm must not import litellm or llama_cpp"
    assert result["cost"] == 0.0 and 0 < result["tokens"] <= 8 and result["text"]
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
