"""One papermill execution for `colabkit batch`, whose kernel is shut down without an interrupt.

jupyter_client's `shutdown_kernel` first interrupts the kernel (SIGINT to its process
group), then asks it to shut down. When the SIGINT lands while the kernel is still in a
message handler (it was, after the last cell of a run_variant notebook, now and then),
ipykernel logs "KeyboardInterrupt caught in kernel." into a successful notebook's log. A
kernel that is being shut down has nothing to interrupt: papermill runs each notebook here
with a kernel manager that skips the interrupt while shutting down (the shutdown request and,
failing that, the kill still follow). Otherwise this is `papermill SOURCE OUTPUT --kernel K
--cwd DIR -p NAME VALUE ...` with string parameters and no progress bar, and a cell's
exception is also written as one line starting with `ERROR_MARK`.
"""

from __future__ import annotations

import argparse
import logging
import sys

from jupyter_client.manager import AsyncKernelManager

ERROR_MARK = "colabkit notebook error: "
"""Starts the one line the log gets when a cell raises: the exception's name and message
(`colabkit batch` shows it in the terminal instead of only the log's path)."""


class ShutdownWithoutInterrupt(AsyncKernelManager):
    """An AsyncKernelManager that does not interrupt a kernel it is shutting down."""

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m colabkit.runner.executors.notebook_exec", description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("output")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--cwd")
    parser.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        papermill.execute_notebook(args.source, args.output, parameters=dict(args.p), kernel_name=args.kernel,
                                   cwd=args.cwd, progress_bar=False, kernel_manager_class=ShutdownWithoutInterrupt)
    except PapermillExecutionError as exc:  # one findable line for the batch's terminal, then the traceback
        evalue = " ".join(str(exc.evalue).split())[:400]
        print(f"{ERROR_MARK}{exc.ename}: {evalue}", file=sys.stderr, flush=True)
        raise


if __name__ == "__main__":
    main()
