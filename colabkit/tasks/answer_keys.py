"""Read DiscoveryBench's answer keys (`eval/answer_key_real.csv`, `eval/answer_key_synth.csv`).

Test-split metadata carries no gold; upstream keeps it in these CSVs, keyed by
(dataset folder, metadata id, query id). Reading them in one place keeps the join rule
(and its error messages) identical for the loader and for `colabkit tasks validate`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from colabkit.errors import ColabkitError

AnswerKey = dict[tuple[str, int, int], str]
_COLUMNS = ("dataset", "metadataid", "query_id", "gold_hypo")


def read_answer_key(path: Path) -> AnswerKey:
    """Map (folder, metadata id, query id) to the gold hypothesis; malformed files fail loudly,
    since a silently skipped row would later look like a task without gold."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ColabkitError(f"malformed answer key {path}: missing column(s) {', '.join(missing)}")
    key: AnswerKey = {}
    for row in reader:
        try:
            ids = (row["dataset"].strip(), int(row["metadataid"]), int(row["query_id"]))
        except (TypeError, ValueError):
            raise ColabkitError(
                f"malformed answer key {path}: line {reader.line_num} has a non-integer "
                f"metadataid or query_id ({row.get('metadataid')!r}, {row.get('query_id')!r})"
            ) from None
        hypothesis = (row["gold_hypo"] or "").strip()
        if hypothesis:
            key[ids] = hypothesis
    return key
