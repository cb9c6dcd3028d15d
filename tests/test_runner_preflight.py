"""A batch fails before it spends (issue 35, Build 2): `colabkit batch` and its dry run check
every model and the judge first; a missing key, an unknown provider or an unreachable
api_base is one line naming the model and the variable, exit 2, in seconds, with no model
call and no judge call made. litellm is imported with the module (its one-off import takes
~4 s idle, far more on a loaded test machine), so the time bound measures the command."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

import litellm  # noqa: F401  (imported here, outside the timed command)
import pytest
from helpers.experiments import write_experiment
from helpers.faulty_provider import KEY, FaultyProvider
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.llm.gateway import Gateway

MODEL = "deepseek/deepseek-chat"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A live provider on loopback (its requests counted), and every gateway request counted."""
    server = FaultyProvider(lambda body: {"thought": "t", "action": "wait"})
    monkeypatch.setenv("DEEPSEEK_API_BASE", server.base)
    calls: list[str] = []
    real = Gateway._request

    async def counting(self: Gateway, config: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("caller", "?"))
        return await real(self, config, *args, **kwargs)

    monkeypatch.setattr(Gateway, "_request", counting)
    yield server, calls
    server.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_batch_with_a_missing_key_exits_2_in_seconds_naming_it_with_no_model_or_judge_call(
        tmp_path, capsys, monkeypatch, counted):
    server, calls = counted
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    path = write_experiment(tmp_path, "nokey", models={"default": MODEL}, judge=MODEL, variants=["single"])
    started = time.monotonic()
    assert main(["batch", str(path), "--variants", "single"]) == 2
    assert time.monotonic() - started < 10
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line == (f"colabkit: error: model '{MODEL}' needs the environment variable DEEPSEEK_API_KEY, "
                    "which is not set")
    assert calls == [] and server.requests == 0  # no session call, no judge call
    assert not (tmp_path / "results").exists() and captured.out == ""


def test_the_judge_is_preflighted_too_and_named(tmp_path, capsys, monkeypatch, counted):
    server, calls = counted
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write_experiment(tmp_path, "judgekey", models={"default": MODEL}, judge="openai/gpt-4o-mini")
    assert main(["batch", str(path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("colabkit: error: judge: model 'openai/gpt-4o-mini' needs the environment variable "
                           "OPENAI_API_KEY")
    assert calls == [] and server.requests == 0


def test_an_unreachable_api_base_is_one_line_naming_its_variable(tmp_path, capsys, monkeypatch, counted):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    base = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("DEEPSEEK_API_BASE", base)
    path = write_experiment(tmp_path, "nobase", models={"default": MODEL}, judge=MODEL)
    started = time.monotonic()
    assert main(["batch", str(path)]) == 2
    assert time.monotonic() - started < 10
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"colabkit: error: model '{MODEL}': DEEPSEEK_API_BASE {base} is unreachable (")
    assert counted[1] == []


def test_an_api_base_in_the_config_is_probed_and_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-any")
    base = f"http://127.0.0.1:{free_port()}/v1"
    models = {"default": {"model": "openai/gpt-4o-mini", "api_base": base}}
    path = write_experiment(tmp_path, "cfgbase", models=models, judge="scripted/judge")
    assert main(["batch", str(path), "--dry-run"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert f"model 'openai/gpt-4o-mini': api_base {base} is unreachable" in line


def test_unknown_provider_is_one_line(tmp_path, capsys):
    path = write_experiment(tmp_path, "noprov", models={"default": "nosuchprovider/x"})
    assert main(["batch", str(path), "--dry-run"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "model 'nosuchprovider/x': unknown provider 'nosuchprovider'" in line


def test_the_paper_dry_run_needs_no_key_and_prints_the_estimate_with_wall_clock_time(tmp_path, capsys, monkeypatch):
    from helpers.env import shared_data

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    paper = Path(__file__).resolve().parents[1] / "experiments" / "paper.yaml"
    assert main(["batch", str(paper), "--dry-run", "--data-root", str(shared_data()), "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "to run: 1482" in out and "cost in all: about $" in out
    assert re.search(r"\n  wall clock: about (\d+ h \d\d min|\d+ min) for 1482 session\(s\) \((\d+ min|\d+ s) each, "
                     r"\d+ at once\)\n", out), out
    assert "s per call assumed (a provider; nothing measured yet" in out
    # the key is what the run will need, named with the run's own line
    assert (f"to run it (not to plan it): model '{MODEL}' needs the environment variable DEEPSEEK_API_KEY, "
            "which is not set") in out
    assert not list(tmp_path.iterdir())  # nothing run or written


def test_the_dry_run_warns_when_the_config_asks_for_more_at_once_than_the_machine_holds(tmp_path, capsys,
                                                                                      monkeypatch):
    from colabkit.runner import wallclock
    from colabkit.runner.executors.capacity import KernelCap

    monkeypatch.setattr(wallclock, "machine_kernel_cap", lambda *_: KernelCap(kernels=3, source="derived", cpus=1,
                                                                              physical_mb=4096, reserved_mb=1024,
                                                                              typical_would_allow=20))
    use_scripted({}, default={"thought": "t", "action": "wait"})  # registers the scripted provider; never called
    path = write_experiment(tmp_path, "busy", variants=["single"], judge="scripted/judge",
                            concurrency={"sessions": 8, "kernels": 8})
    assert main(["batch", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the config asks for 8 sessions at once; this machine holds 3 (derived:" in out
    path = write_experiment(tmp_path, "fits", variants=["single"], judge="scripted/judge",
                            concurrency={"sessions": 3, "kernels": 3})
    assert main(["batch", str(path), "--dry-run"]) == 0
    assert "WARNING" not in capsys.readouterr().out
