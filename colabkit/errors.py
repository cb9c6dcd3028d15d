"""Errors the suite reports to its users.

Every error a researcher can cause (a malformed task file, an unknown variant, a bad
parameter) is a `ColabkitError` whose message is one line naming the file or value, so the
CLI can print it without a traceback.
"""


class ColabkitError(Exception):
    """A problem with the user's input or environment, reported as one clear line."""


def one_line(exc: BaseException, limit: int = 200) -> str:
    """`exc`'s message on one line (whitespace collapsed), cut to `limit` characters, for
    error lines, flags and reports that quote another library's error."""
    return " ".join(str(exc).split())[:limit]
