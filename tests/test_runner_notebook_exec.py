"""`colabkit batch` executes notebooks through papermill with a kernel manager that does not
interrupt a kernel it is shutting down (jupyter_client's does, and an interrupt landing in a
message handler put "KeyboardInterrupt caught in kernel." into successful notebooks' logs)."""

from __future__ import annotations

import asyncio
import signal

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager

from colabkit.runner.executors.notebook_exec import ShutdownWithoutInterrupt, main


def signals_at_shutdown(manager_class: type[AsyncKernelManager]) -> list[int]:
    async def run() -> list[int]:
        km = manager_class(kernel_name="python3")
        sent: list[int] = []
        original = km._async_signal_kernel

        async def recording(signum: int) -> None:
            sent.append(signum)
            await original(signum)

        km._async_signal_kernel = recording  # type: ignore[method-assign]
        await km.start_kernel()
        await km.shutdown_kernel()
        return sent

    return asyncio.run(run())


@pytest.mark.slow  # two kernels
def test_the_batchs_kernel_manager_shuts_down_without_an_interrupt():
    assert signal.SIGINT in signals_at_shutdown(AsyncKernelManager)  # what jupyter_client does
    assert signal.SIGINT not in signals_at_shutdown(ShutdownWithoutInterrupt)


@pytest.mark.slow  # a notebook kernel
def test_notebooks_run_with_their_parameters_as_under_papermill(tmp_path):
    source, executed = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('variant = "single"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print(variant * 2)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, source)
    main([str(source), str(executed), "--kernel", "python3", "--cwd", str(tmp_path), "-p", "variant", "memory-dr"])
    cells = nbformat.read(executed, as_version=4).cells
    assert cells[-1].outputs[0]["text"] == "memory-drmemory-dr\n"
    assert executed.read_text().count("injected-parameters") >= 1


@pytest.mark.slow  # a notebook kernel
def test_a_failing_cell_leaves_one_findable_error_line_for_the_batch(tmp_path, capsys):
    from papermill.exceptions import PapermillExecutionError

    from colabkit.runner.pipeline import first_error_line

    source, executed = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("class ColabkitError(Exception): pass\n"
                                          "raise ColabkitError(\"model 'deepseek/deepseek-chat' needs the environment\\n"
                                          "variable DEEPSEEK_API_KEY, which is not set\")")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, source)
    with pytest.raises(PapermillExecutionError):
        main([str(source), str(executed), "--kernel", "python3", "--cwd", str(tmp_path)])
    log = tmp_path / "run.log"
    log.write_text("Executing notebook\nTraceback (most recent call last):\n  ...\n" + capsys.readouterr().err)
    assert first_error_line(log) == ("ColabkitError: model 'deepseek/deepseek-chat' needs the environment "
                                     "variable DEEPSEEK_API_KEY, which is not set")
    log.write_text("Traceback (most recent call last):\n  File x\nValueError: bad thing\n")  # no mark: the last named
    assert first_error_line(log) == "ValueError: bad thing"
