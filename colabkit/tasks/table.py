"""`read_table`: load a task's data file the way the suite's own code needs it.

Participants get DiscoveryBench's raw files in their kernel and must cope with them; the
suite (validation, demo generation, metrics) needs the values right. Two quirks of the
archaeology data decide the rules here:

- Decimal commas inside quoted fields (`"-0,44"` in capital.csv and the pollen file). A
  column is converted only when *every* value in it is a number written with an optional
  decimal comma and at least one has a comma, so text such as "Smith, J." and columns that
  look like thousands grouping ("1,234", "12,500": ambiguous) are left untouched.
- A first column with an empty header: a pandas index saved by `to_csv`. It becomes the
  DataFrame's index (unnamed), so no value is lost while the columns are exactly the named
  ones the metadata describes; `df.reset_index()` brings it back as a column.

Other types are pandas' own inference. `.tsv` is tab-separated and `.dta` (two upstream
train datasets) is read with `pandas.read_stata`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from colabkit.errors import ColabkitError

_COMMA_NUMBER = re.compile(r"^[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?[1-9]\d{0,2}(,\d{3})+$")


def read_table(path: Path | str) -> pd.DataFrame:
    """The file as a DataFrame with numeric columns typed; a user error names the path."""
    path = Path(path)
    if not path.is_file():
        raise ColabkitError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".dta":
        return pd.read_stata(path)
    if suffix not in (".csv", ".tsv"):
        raise ColabkitError(f"not a table (expected .csv, .tsv or .dta): {path}")
    text = _decode(path)
    sep = "\t" if suffix == ".tsv" else ","
    header = next(csv.reader(io.StringIO(text), delimiter=sep), None)
    if not header:
        raise ColabkitError(f"empty data file: {path}")
    saved_index = header[0].strip() == ""
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, index_col=0 if saved_index else None,
                            low_memory=False)
    except (pd.errors.ParserError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ColabkitError(f"cannot parse data file {path}: {first}") from None
    if saved_index:
        frame.index.name = None
    for column in frame.columns:
        if _is_text(frame[column]) and _is_comma_decimal(frame[column]):
            frame[column] = pd.to_numeric(frame[column].str.strip().str.replace(",", ".", regex=False))
    return frame


def _decode(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _is_text(series: pd.Series) -> bool:
    """Text columns are `object` in pandas 2 and the `str` dtype in pandas 3."""
    return pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series)


def _is_comma_decimal(series: pd.Series) -> bool:
    values = series.dropna()
    if values.empty or not all(isinstance(v, str) for v in values):
        return False
    values = values.str.strip()
    if not values.map(lambda v: bool(_COMMA_NUMBER.match(v))).all():
        return False
    with_comma = values[values.str.contains(",", regex=False)]
    return not with_comma.empty and not with_comma.map(lambda v: bool(_THOUSANDS.match(v))).all()
