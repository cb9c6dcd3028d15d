"""How a run's outputs read in a rendered notebook: the plumbing-grade line, tables whole.

A run whose participants are the embedded 135M model (`make demo`) exercises every part of
the suite, but its numbers say nothing about the study; every notebook and figure of such a
run says so in one line (`plumbing_line`, shown by `banner`, added to figures by
`mark_figures`), whatever the judge. The judge's own warning (`colabkit.analysis.judging`)
stays beside it: a capable judge can score a plumbing-grade run, and the other way round.

Tables: pandas' HTML is cut at the right edge of a rendered notebook when it is wider than
the page. `table_html` wraps a table in a box that scrolls sideways and lets long cells wrap,
and an empty table says why it is empty instead of showing headers only.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from colabkit.analysis.figures import add_caption_line
from colabkit.llm import DEFAULT_MODEL

PLUMBING_LINE = (f"PLUMBING-GRADE RUN: the embedded model {DEFAULT_MODEL} played this run's participants. It "
                 "exercises every part of the suite, but its numbers mean nothing about the study.")
_CELL_STYLE = "white-space:normal;overflow-wrap:anywhere;max-width:28em;vertical-align:top;text-align:left"


def plumbing_run(models: Iterable[str]) -> bool:
    """Whether any of these participant models (litellm strings) is the embedded model."""
    return any(model == DEFAULT_MODEL for model in models)


def stored_models(results: Path | str, session_ids: Iterable[str] | None = None) -> set[str]:
    """The models the stored sessions of `results` ran their participants on (empty: no sessions)."""
    from colabkit.store import load_sessions

    if not Path(results).is_dir():
        return set()
    sessions = load_sessions(results, session_ids)
    return {config["model"] for text in sessions.get("models_json", ()) for config in json.loads(text).values()}


def plumbing_line(results: Path | str, session_ids: Iterable[str] | None = None) -> str | None:
    """`PLUMBING_LINE` when a stored session of `results` (of `session_ids`) ran on the embedded model."""
    return PLUMBING_LINE if plumbing_run(stored_models(results, session_ids)) else None


class Html:
    """An HTML fragment a notebook displays as such (and a console prints as its text)."""

    def __init__(self, markup: str, text: str) -> None:
        self.markup, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text


def banner(line: str | None) -> Html:
    """The line as an amber box for the top of a rendered notebook; for no line an empty
    fragment, which shows nothing (`display(None)` would print "None")."""
    if not line:
        return Html("", "")
    return Html('<div class="ck-plumbing" style="border:2px solid #b7791f;background:#fff8e1;color:#5f370e;'
                f'padding:8px;font-weight:bold">{html.escape(line)}</div>', line)


def mark_figures(figures: Iterable[Figure], line: str | None) -> None:
    """Add `line` (the plumbing-grade run) to the caption of every figure."""
    for fig in figures:
        add_caption_line(fig, line)


def table_html(table: pd.DataFrame, empty: str, *, index: bool = False) -> Html:
    """The whole table as HTML: sideways scrolling when wider than the page, long cells wrapped;
    an empty table is one line saying why (`empty`)."""
    if table.empty:
        return Html(f'<p class="ck-empty"><i>No rows: {html.escape(empty)}</i></p>', f"No rows: {empty}")
    markup = table.to_html(index=index, na_rep="–", border=0, classes="ck-table")
    markup = markup.replace("<td>", f'<td style="{_CELL_STYLE}">').replace("<th>", f'<th style="{_CELL_STYLE}">')
    return Html(f'<div class="ck-table-box" style="overflow-x:auto;max-width:100%">{markup}</div>',
                table.to_string(index=index))
