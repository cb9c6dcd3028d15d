"""Hidden-profile briefings: what each persona privately knows about a task.

The study builds a hidden profile (Stasser & Titus) out of Co-Gym's private task info: R
holds the task's domain knowledge, D the dataset and column descriptions and the data's
quirks, and the AI agent neither -- only the query and the file names, which everybody gets.
What a persona holds is its `knows` field, so custom personas can take any slice.

Briefings are built from the participant-safe `Task` only (it carries no gold). They are
whole unless the session's observation profile caps them (`max_chars`, the profile's
`briefing_chars`: only the compact profile of the embedded model, whose context is tiny, sets
one; `DEFAULT_MAX_CHARS` is this function's own default for callers without a profile).
Shortening is deliberate rather than a blunt cut: numbered domain-knowledge points
are trimmed evenly (the longest first), the data quirks are kept whole, columns related to
the query or carrying a description are kept before the rest, and the briefing says when it
was shortened. The query and the file names are never cut.

Data quirks are detected cheaply and deterministically from the metadata and the first few
KB of each CSV: decimal commas inside quoted fields, an unnamed index column, empty cells,
columns documented as "Dropped after data loading", raw vs `_inter` column pairs, and
columns the file and the metadata disagree on.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from colabkit.tasks.table import sniff_delimiter
from colabkit.team.personas import Persona, persona
from colabkit.team.textfit import fair_cap, fit_all, trim

if TYPE_CHECKING:
    from colabkit.tasks import DatasetInfo, Task

DEFAULT_MAX_CHARS = 1600
SHORTENED_NOTE = "(Some notes were shortened to fit.)"
HEADING = "Your private notes (only you have them; share them in your own words when they matter):"
_DOMAIN_LABEL = "Domain knowledge: "
_HEAD_BYTES = 8192
_DESC_MAX = 90
_COLUMN_DESC_CAP = 40
_PREFIX_WORDS = 6
_PREFIX_MIN_COLUMNS = 3
_QUIRK_NAMES = 5
_UNNAMED_INDEX = "the unnamed first column is a saved row index"
_SEPARATORS = {"\t": "tab", ";": "semicolon"}
_DECIMAL_COMMA = re.compile(r"^-?\d+,\d+$")
_POINT_START = re.compile(r"(?<!\S)(?=\d{1,2}\.\s)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def private_briefing(who: str | Persona, task: Task, *, max_chars: int | None = DEFAULT_MAX_CHARS) -> str:
    """The text persona `who` privately starts with on `task`: query, files, its private slice.

    `max_chars=None` disables shortening (for models with large context windows).
    """
    p = who if isinstance(who, Persona) else persona(who)
    files = ", ".join(f"data/{Path(ds.path).name}" for ds in task.datasets)
    shared = f"Query: {task.query.strip()}\nFiles: {files}"
    body = _private_body(p, task, None)
    if not body:
        return shared
    text = f"{shared}\n{HEADING}\n{body}"
    if max_chars is None or len(text) <= max_chars:
        return text
    budget = max_chars - len(shared) - len(HEADING) - len(SHORTENED_NOTE) - 3
    return f"{shared}\n{HEADING}\n{_private_body(p, task, max(budget, 0))}\n{SHORTENED_NOTE}"


def _private_body(p: Persona, task: Task, budget: int | None) -> str:
    """The persona's private slices, within `budget` characters when given ("" if it holds none)."""
    knowledge = task.domain_knowledge.strip() if "domain_knowledge" in p.knows else ""
    datasets = task.datasets if "datasets" in p.knows else ()
    domain_len = len(_DOMAIN_LABEL) + len(knowledge) if knowledge else 0
    data_len = len(_data_notes(datasets, None, task.query)) if datasets else 0
    # Both slices (custom personas only) share the budget evenly, the shorter giving back its spare.
    cap = None if budget is None else fair_cap([domain_len, data_len], budget - 1)
    parts = []
    if knowledge:
        parts.append(_DOMAIN_LABEL + knowledge if cap is None else _fit_domain(knowledge, min(domain_len, cap)))
    if datasets:
        parts.append(_data_notes(datasets, None if cap is None else min(data_len, cap), task.query))
    body = "\n".join(parts)
    return body if budget is None else trim(body, budget)


def _fit_domain(knowledge: str, budget: int) -> str:
    """Domain knowledge with each numbered point (or sentence) trimmed evenly to fit."""
    points = [s.strip() for s in _POINT_START.split(knowledge) if s.strip()]
    if len(points) < 2:
        points = [s for s in _SENTENCE_END.split(knowledge) if s]
    fitted = fit_all(points, budget - len(_DOMAIN_LABEL) - len(points))
    return _DOMAIN_LABEL + " ".join(t for t in fitted if t)


def _data_notes(datasets: tuple[DatasetInfo, ...], budget: int | None, query: str) -> str:
    """One block per file: description, quirks, column lists; the lists share what budget is left."""
    heads: list[str] = []
    lists: list[tuple[int, str, list[tuple[str, str]]]] = []  # (dataset index, label, columns)
    for i, ds in enumerate(datasets):
        groups, quirks = _describe(ds, whole=budget is None)
        description = " ".join(ds.description.split())
        description = description if budget is None else trim(description, _DESC_MAX)
        head = f"data/{Path(ds.path).name} ({len(ds.columns)} columns): {description}"
        heads.append(head + ("\n Quirks: " + "; ".join(quirks) + "." if quirks else ""))
        lists.extend((i, label, cols) for label, cols in groups)
    columns = [cols for _, _, cols in lists]
    if budget is None:
        texts = ["; ".join(f"{n}: {d}" if d else n for n, d in cols) for cols in columns]
    else:
        fixed = len("Data notes:") + sum(len(h) + 1 for h in heads) + sum(len(lb) + 4 for _, lb, _ in lists)
        texts = _fit_column_lists(columns, budget - fixed, query)
    blocks = [
        head + "".join(f"\n {label}: {text}" for (j, label, _), text in zip(lists, texts) if j == i and text)
        for i, head in enumerate(heads)
    ]
    return "Data notes:\n" + "\n".join(blocks)


def _describe(ds: DatasetInfo, *, whole: bool) -> tuple[list[tuple[str, list[tuple[str, str]]]], list[str]]:
    """The file's column lists (label, [(name, description)]) and its quirks.

    Dropped columns move into the quirks, raw/`_inter` pairs are listed once, description
    openings shared by several columns ("Z values for ...") are stated once per list, and
    descriptions that only repeat the name ("Dagger: Daggers") are left out: that keeps what
    matters (which opaque name means what) within the budget. A file that is not a table (a
    Newick tree, say) has no columns: the one quirk worth saying is how to open it.
    """
    if ds.kind != "table":
        return [], [f"not a table but a {Path(ds.path).suffix or 'plain'} file: open it directly "
                    "(open(...).read() for text), not with pd.read_csv"]
    described = [(c.name, " ".join(c.description.split())) for c in ds.columns]
    names = {n for n, _ in described}
    dropped = [n for n, d in described if "dropped" in d.lower()]
    index_like = [n for n, _ in described if n.lower().startswith("unnamed")]
    paired = {n for n in names if f"{n}_inter" in names}
    quirks = _file_quirks(Path(ds.path), [n for n, _ in described if n not in index_like], bool(index_like), whole)
    if dropped:
        quirks.append(f"{_some(dropped, whole)}: documented as dropped after loading, not analysis variables")
    if paired:
        quirks.append("X(_inter) = raw column X and its interpolated X_inter")
    skip = {*dropped, *index_like, *(f"{n}_inter" for n in paired)}
    cols = [(f"{n}(_inter)" if n in paired else n, d) for n, d in described if n not in skip]
    return [(label, [(n, _unless_repeats(n, d)) for n, d in group]) for label, group in _group_by_prefix(cols)], quirks


def _unless_repeats(name: str, description: str) -> str:
    """The description, or "" when each of its words (4+ letters, by stem) is already in the name."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", description)]
    return "" if all(w[:5] in name.lower() for w in words) else description


def _group_by_prefix(cols: list[tuple[str, str]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Split columns into lists by the longest description opening (2+ words) shared by 3+ columns."""
    counts: Counter[str] = Counter()
    for _, desc in cols:
        words = desc.split()
        counts.update(" ".join(words[:k]) for k in range(2, min(_PREFIX_WORDS, len(words) - 1) + 1))
    groups: dict[str, list[tuple[str, str]]] = {"": []}
    for name, desc in cols:
        words = desc.split()
        openings = (" ".join(words[:k]) for k in range(min(_PREFIX_WORDS, len(words) - 1), 1, -1))
        prefix = next((o for o in openings if counts[o] >= _PREFIX_MIN_COLUMNS), "")
        groups.setdefault(prefix, []).append((name, desc[len(prefix) :].strip()))
    return [(f'Columns "{p} …"' if p else "Columns", c) for p, c in groups.items() if c]


def _file_quirks(path: Path, described: list[str], index_in_metadata: bool, whole: bool) -> list[str]:
    """Quirks visible in the CSV's first few KB (only the metadata's word when it cannot be read)."""
    try:
        stat = path.stat()
        raw = _head(path, stat.st_mtime_ns, stat.st_size)
    except OSError:
        return [_UNNAMED_INDEX] if index_in_metadata else []
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if len(raw) == _HEAD_BYTES:
        lines = lines[:-1]  # the last line is probably cut
    sep = sniff_delimiter("\n".join(lines))
    rows = list(csv.reader(lines, delimiter=sep))
    if not rows:
        return []
    header, data = rows[0], rows[1:]
    quirks = [f"{_SEPARATORS[sep]}-separated: read with sep={sep!r}"] if sep != "," else []
    if (header and header[0] == "") or index_in_metadata:
        quirks.append(_UNNAMED_INDEX)
    examples = [f for row in data for f in row if _DECIMAL_COMMA.match(f)]
    if examples:
        quirks.append(f'decimal commas in quoted numbers ("{min(examples, key=len)}"): read with decimal=","')
    if any(f == "" for row in data for f in row[1:]):
        quirks.append("some cells are empty")
    undocumented = [h for h in header if h and h not in described]
    if undocumented:
        quirks.append(f"not in the column descriptions: {_some(undocumented, whole)}")
    absent = [n for n in described if n not in header]
    if absent:
        quirks.append(f"described but not in the file: {_some(absent, whole)}")
    return quirks


@lru_cache(maxsize=64)
def _head(path: Path, mtime_ns: int, size: int) -> bytes:
    """The file's first `_HEAD_BYTES`, read once per process while the file is unchanged: every
    participant of every session of a batch is briefed on the same few files, and a read here
    blocks the batch's event loop (slow while dozens of workspaces copy data). `mtime_ns` and
    `size` are in the cache's key, so a changed file is read again."""
    with path.open("rb") as fh:
        return fh.read(_HEAD_BYTES)


def _some(names: list[str], whole: bool) -> str:
    """All names (`whole`), else up to `_QUIRK_NAMES` and how many more: quirks are never trimmed later."""
    if whole:
        return ", ".join(names)
    extra = f" and {len(names) - _QUIRK_NAMES} more" if len(names) > _QUIRK_NAMES else ""
    return ", ".join(names[:_QUIRK_NAMES]) + extra


def _fit_column_lists(columns: list[list[tuple[str, str]]], budget: int, query: str) -> list[str]:
    """Fit all column lists in `budget`, keeping the most useful columns first.

    Column names alone are not private (anyone can print `df.columns`); descriptions are. So
    columns are kept in the order: related to the query, then described, then the rest, taking
    turns between lists; each is costed with its description capped at `_COLUMN_DESC_CAP`, so
    long descriptions do not crowd out other columns. A list that loses columns ends with
    "+N more"; the kept descriptions then share the room left evenly.
    """
    terms = {w[:5] for w in re.findall(r"[a-z]{4,}", query.lower())}

    def rank(entry: tuple[int, int, str, str]) -> tuple[bool, bool, int, int]:
        li, ci, name, desc = entry
        text = f"{name} {desc}".lower()
        return (not any(t in text for t in terms), not desc, ci, li)

    flat = [(li, ci, n, d) for li, cols in enumerate(columns) for ci, (n, d) in enumerate(cols)]
    room = budget - len("; +99 more") * len(columns)
    kept: set[tuple[int, int]] = set()
    for li, ci, name, desc in sorted(flat, key=rank):
        cost = len(name) + 2 + (min(len(desc), _COLUMN_DESC_CAP) + 2 if desc else 0)
        if cost > room:
            break
        kept.add((li, ci))
        room -= cost
    room += sum(min(len(d), _COLUMN_DESC_CAP) for li, ci, _, d in flat if (li, ci) in kept)
    descs = iter(fit_all([d for li, ci, _, d in flat if (li, ci) in kept], room))
    texts = []
    for li, cols in enumerate(columns):
        shown = [(n, next(descs)) for ci, (n, _) in enumerate(cols) if (li, ci) in kept]
        more = f"; +{len(cols) - len(shown)} more" if len(shown) < len(cols) else ""
        texts.append(("; ".join(f"{n}: {d}" if d else n for n, d in shown) + more).removeprefix("; "))
    return texts
