"""`read_table`: load a task's data file the way the suite's own code needs it.

Participants get DiscoveryBench's raw files in their kernel and must cope with them; the
suite (validation, demo generation, metrics) needs the values right. The rules:

- The delimiter (comma, tab or semicolon) is sniffed from the content, not trusted from the
  extension: upstream ships `.csv` files that are tab-separated with quoted headers. The
  delimiter that splits the header and the first rows into the same number (> 1) of fields
  wins, the one giving most fields first; when none is consistent, the extension decides.
- Decimal commas inside quoted fields (`"-0,44"` in capital.csv and the pollen file). A
  column is converted only when *every* value in it is a number written with an optional
  decimal comma and at least one has a comma, so text such as "Smith, J." and columns that
  look like thousands grouping ("1,234", "12,500": ambiguous) are left untouched.
- A first column with an empty header: a pandas index saved by `to_csv`. It becomes the
  DataFrame's index (unnamed), so no value is lost while the columns are exactly the named
  ones the metadata describes; `df.reset_index()` brings it back as a column.
- Binary content (NUL bytes, control characters) is not a table whatever the extension says.

Other types are pandas' own inference; `.dta` (two upstream train datasets) is read with
`pandas.read_stata`. What was decided is reported (`TableReading`), and kept in the frame's
`attrs["reading"]`, so a surprising result can be traced to its cause.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from colabkit.errors import ColabkitError

TEXT_TABLE_SUFFIXES = (".csv", ".tsv", ".tab")
TABLE_SUFFIXES = (*TEXT_TABLE_SUFFIXES, ".dta")
_DELIMITERS = {",": "comma", "\t": "tab", ";": "semicolon"}
_SNIFF_BYTES = 64 * 1024
_SNIFF_ROWS = 20
_COMMA_NUMBER = re.compile(r"^[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?[1-9]\d{0,2}(,\d{3})+$")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")


def is_table_name(name: str) -> bool:
    """Whether a file name says "table" (metadata-level: the content is checked when read)."""
    return Path(name).suffix.lower() in TABLE_SUFFIXES


@dataclass(frozen=True)
class TableReading:
    """How `read_table` read a file: format, delimiter, encoding, index and converted columns."""

    path: Path
    format: str  # "text" or "stata"
    delimiter: str | None
    encoding: str | None
    saved_index: bool
    decimal_comma_columns: tuple[str, ...]
    rows: int
    columns: int

    def line(self) -> str:
        """One line a user can read: "capital.csv: comma-separated utf-8, 39 rows x 15 columns"."""
        if self.format == "stata":
            how = "Stata file"
        else:
            how = f"{_DELIMITERS.get(self.delimiter or '', repr(self.delimiter))}-separated {self.encoding}"
        parts = [f"{self.path.name}: {how}, {self.rows} rows x {self.columns} columns"]
        if self.saved_index:
            parts.append("unnamed first column used as the index")
        if self.decimal_comma_columns:
            shown = ", ".join(self.decimal_comma_columns[:5])
            more = f" and {len(self.decimal_comma_columns) - 5} more" if len(self.decimal_comma_columns) > 5 else ""
            parts.append(f"decimal commas read in {shown}{more}")
        return "; ".join(parts)


def read_table(path: Path | str) -> pd.DataFrame:
    """The file as a DataFrame with numeric columns typed; a user error names the path.

    `frame.attrs["reading"]` holds the one-line `TableReading` of what was decided.
    """
    frame, reading = read_table_reported(path)
    frame.attrs["reading"] = reading.line()
    return frame


def read_table_reported(path: Path | str) -> tuple[pd.DataFrame, TableReading]:
    """`read_table` plus the `TableReading` describing how the file was read."""
    path = Path(path)
    if not path.is_file():
        raise ColabkitError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".dta":
        return _read_stata(path)
    if suffix not in TEXT_TABLE_SUFFIXES:
        raise ColabkitError(f"not a table (expected {', '.join(TABLE_SUFFIXES)}): {path}")
    text, encoding = _decode(path)
    sep = sniff_delimiter(text, default="\t" if suffix in (".tsv", ".tab") else ",")
    header = next(csv.reader(io.StringIO(text), delimiter=sep), None)
    if not header:
        raise ColabkitError(f"empty data file: {path}")
    saved_index = header[0].strip() == "" and len(header) > 1
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, index_col=0 if saved_index else None,
                            low_memory=False)
    except (pd.errors.ParserError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ColabkitError(f"cannot parse data file {path}: {first}") from None
    if saved_index:
        frame.index.name = None
    converted = []
    for column in frame.columns:
        if _is_text(frame[column]) and _is_comma_decimal(frame[column]):
            frame[column] = pd.to_numeric(frame[column].str.strip().str.replace(",", ".", regex=False))
            converted.append(str(column))
    reading = TableReading(path, "text", sep, encoding, saved_index, tuple(converted), len(frame),
                           len(frame.columns))
    return frame, reading


def sniff_delimiter(text: str, *, default: str = ",") -> str:
    """Comma, tab or semicolon: the one splitting the first rows into equally many fields (> 1)."""
    sample = text[:_SNIFF_BYTES]
    lines = sample.splitlines()
    if len(sample) == _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line is probably cut
    best: tuple[int, str] | None = None
    for sep in _DELIMITERS:
        try:
            rows = [row for row in csv.reader(lines[:_SNIFF_ROWS], delimiter=sep) if row]
        except csv.Error:
            continue
        widths = {len(row) for row in rows}
        if len(widths) == 1 and (width := widths.pop()) > 1 and (best is None or width > best[0]):
            best = (width, sep)
    return best[1] if best else default


def _read_stata(path: Path) -> tuple[pd.DataFrame, TableReading]:
    try:
        frame = pd.read_stata(path)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ColabkitError(f"cannot parse Stata file {path}: {first}") from None
    return frame, TableReading(path, "stata", None, None, False, (), len(frame), len(frame.columns))


def _decode(path: Path) -> tuple[str, str]:
    """The file's text and encoding; binary content is refused rather than decoded as cp1252."""
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    head = raw[:_SNIFF_BYTES]
    if b"\x00" in head or len(_CONTROL.findall(head.decode("latin-1"))) > max(2, len(head) // 200):
        raise ColabkitError(f"not a text table (binary content): {path}")
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace"), "cp1252"


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
