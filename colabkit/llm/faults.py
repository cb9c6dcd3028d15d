"""What a failed request becomes: one line naming the model, the failure and the provider's words.

`providers.classify` sorts a failure (retry, fatal, format, answer); this module turns the
ones that stop the caller into their exceptions: a refusal no retry can fix is a
`ProviderError`, transient failures past the retry bound a `ProviderUnavailable`. Both are
one line, so a batch or a scoring job can report them as they are.
"""

from __future__ import annotations

import asyncio

from colabkit.llm.providers import provider_message
from colabkit.llm.records import CallRecord, ProviderError, ProviderUnavailable

ERROR_CHARS = 400
"""The longest error text a `CallRecord` or an error line quotes."""
_PROVIDER_TROUBLE = {401: "authentication failed, check the API key", 402: "payment required",
                     403: "permission denied", 404: "model not found"}


def fatal(model: str, exc: BaseException, record: CallRecord) -> ProviderError:
    """A one-line `ProviderError`: the model, what went wrong, and the provider's own words."""
    status = _status(exc)
    trouble = _PROVIDER_TROUBLE.get(status or 0, "request rejected")
    where = f"HTTP {status} " if status is not None else ""
    detail = provider_message(exc)[:ERROR_CHARS]
    return ProviderError(f"{model}: {trouble} ({where}{type(exc).__name__}): {detail}",
                         model=model, status=status, records=[record])


def unavailable(model: str, exc: BaseException, record: CallRecord, elapsed: float) -> ProviderUnavailable:
    """A one-line `ProviderUnavailable`: the model, how long it was tried, and the last failure."""
    return ProviderUnavailable(
        f"{model}: provider unavailable after {record.attempts} attempt(s) in {elapsed:.1f} s "
        f"({record.error})", model=model, status=_status(exc), records=[record])


def describe(exc: BaseException) -> str:
    """The exception's type and first line, for a `CallRecord.error`."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not text:
        text = "no answer within the timeout"
    return f"{type(exc).__name__}: {text}"[:ERROR_CHARS]


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None
