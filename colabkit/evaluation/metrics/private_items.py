"""The hidden profile's items, the shared record's texts, and the judge-free lexical decider.

Pooling (Stasser & Titus 1985) asks which of the items each member privately held reached the
group. This module fixes the three things both deciders (`pooling.py`) share:

**Items.** A simulated human's items are read off the briefing it actually received (the
session record's `briefings`: after any shortening the observation profile applied, so an item
cut away is no item). Only the part under the briefing's private heading counts: the query and
the file names everybody gets. The split follows the briefing's own layout (`team/briefing.py`):

- domain knowledge: one item per numbered point ("1. ...", "2. ..."), else per sentence;
  id `<holder>/domain/<k>` (k from 1, in order);
- data notes, per file: its description (`<holder>/data/<file>/about`), each quirk
  (`.../quirk/<k>`), and each column *with a description* (`.../column/<name>`). A bare column
  name is not private (anyone can print `df.columns`), and a "+N more" tail names nothing.

Ids depend on the briefing's structure, not its wording, so sessions of one task under one
observation profile join on them; the text hash (`digest`) tells a reader when wording differs.
A column description that itself contains "; " is cut there (the briefing's list separator):
its fragment after the cut has no "name:" and is dropped, a documented imprecision.

**The shared record.** Every text a team member could read in common, in log order, with the
channel it travelled by: `chat` (task-phase messages that were sent), `memory` (the frozen
Shared Group Memory of the build phase, and a living memory's updates), `cell` (the code of every
executed cell, whatever its outcome: the notebook shows it; outputs are the kernel's, not a
member's words), `reason` (a held request's content as its signatory saw it, and the stated reason
of every decision) and `editor` (every result-editor version that took effect). The submitted
hypothesis is judged apart: "used in the final hypothesis" is a property of an item, not a channel.
The build phase's proposals and ratifications are drafts read by the consolidating AI, not the
team's common record: the memory counts as the channel once it is frozen.

**The lexical lower bound.** An item's distinctive tokens are its words (lower case, a final "s"
dropped, cut to 6 letters; numbers kept whole) minus stop words and minus every token of the
briefing's public part (query and file names). A text conveys an item when it holds at least
`LEXICAL_MIN_HITS` of them and at least `LEXICAL_SHARE` of them. An item with fewer distinctive
tokens than `LEXICAL_MIN_HITS` is never found (`decidable=False`): the bound errs toward "not
conveyed", so a paraphrase is missed rather than a coincidence counted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from colabkit.evaluation.metrics.process import chat_turns, event_item
from colabkit.hashing import sha256_hex
from colabkit.session.events import SYSTEM, Event, is_decision
from colabkit.team import MemoryRecord
from colabkit.team.briefing import HEADING, SHORTENED_NOTE

Channel = Literal["chat", "memory", "cell", "reason", "editor"]
CHANNELS: tuple[Channel, ...] = ("chat", "memory", "cell", "reason", "editor")
LEXICAL_SHARE = 0.6
LEXICAL_MIN_HITS = 2
_STEM = 6
_POINT_START = re.compile(r"(?<!\S)(?=\d{1,2}\.\s)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"^\d{1,2}\.\s+")
_FILE_HEAD = re.compile(r"^data/(?P<file>\S+) \(\d+ columns\): ?(?P<about>.*)$")
_TOKEN = re.compile(r"\d+(?:[.,]\d+)?|[a-z][a-z0-9_]*")
_STOP_WORDS = """
about above after again against also among and any are because been before being below between both
but can column columns could data dataset did does doing down during each either file files for from
further had has have having here how into its itself just more most much must not now number numbers
off once only other our out over own same should some such than that the their them then there these
they this those through under until use used uses using value values very was were what when where
which while who whom why will with within would you your
"""
_STOP = frozenset(_STOP_WORDS.split())


class PrivateItem(BaseModel):
    """One item of one simulated human's private briefing."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    holder: str
    kind: Literal["domain", "about", "quirk", "column"]
    text: str
    digest: str
    """The first 12 hex digits of the text's sha256 (same id, other wording: a different digest)."""
    tokens: tuple[str, ...]
    """Its distinctive tokens (the lexical decider's evidence), sorted."""

    @property
    def decidable(self) -> bool:
        """Whether the lexical bound can ever find it (enough distinctive tokens)."""
        return len(self.tokens) >= LEXICAL_MIN_HITS


class RecordText(BaseModel):
    """One text of the shared record: where it is in the log and how it travelled."""

    model_config = ConfigDict(frozen=True)

    text_id: str
    seq: int
    round: int
    phase: Literal["build", "task"]
    channel: Channel
    author: str
    """The participant who wrote it ("system" for the memory, which the team wrote together)."""
    text: str


def tokens(text: str) -> set[str]:
    """The normalised tokens of `text` (see the module docstring), stop words left out."""
    out = set()
    for raw in _TOKEN.findall(text.lower()):
        if raw[0].isdigit():
            out.add(raw)
            continue
        word = raw[:-1] if len(raw) >= 5 and raw.endswith("s") else raw
        if len(word) >= 3 and word not in _STOP:
            out.add(word[:_STEM])
    return out


def split_briefing(holder: str, briefing: str) -> list[PrivateItem]:
    """`holder`'s private items in `briefing`, in briefing order ([] when it holds none)."""
    public, heading, private = briefing.partition(HEADING)
    if not heading:
        return []
    shared = tokens(public)
    found: list[tuple[str, str, str]] = []  # (id suffix, kind, text)
    file = ""
    for line in private.replace(SHORTENED_NOTE, "").splitlines():
        stripped = line.strip()
        if stripped.startswith("Domain knowledge: "):
            found += [(f"domain/{k}", "domain", p) for k, p in enumerate(_points(stripped[18:]), 1)]
        elif match := _FILE_HEAD.match(stripped):
            file = match["file"]
            if match["about"].strip():
                found.append((f"data/{file}/about", "about", match["about"].strip()))
        elif stripped.startswith("Quirks: ") and file:
            for k, quirk in enumerate(stripped[8:].rstrip(".").split("; "), 1):
                found.append((f"data/{file}/quirk/{k}", "quirk", quirk.strip()))
        elif stripped.startswith("Columns") and ": " in stripped and file:
            label, _, listing = stripped.partition(": ")
            prefix = label.removeprefix("Columns").strip().strip('"').removesuffix("…").strip()
            for entry in listing.split("; "):
                name, sep, desc = entry.partition(": ")
                if sep and desc.strip() and not re.fullmatch(r"\+\d+ more", entry.strip()):
                    text = f"{name.strip()}: {prefix + ' ' if prefix else ''}{desc.strip()}"
                    found.append((f"data/{file}/column/{name.strip()}", "column", text))
    return [PrivateItem(item_id=f"{holder}/{suffix}", holder=holder, kind=kind, text=text,
                        digest=sha256_hex(text)[:12], tokens=tuple(sorted(tokens(text) - shared)))
            for suffix, kind, text in found if text]


def _points(knowledge: str) -> list[str]:
    """Numbered points without their numbers (a point's number is its id, not its content)."""
    points = [_NUMBER.sub("", s.strip()) for s in _POINT_START.split(knowledge) if s.strip()]
    return points if len(points) >= 2 else [s.strip() for s in _SENTENCE_END.split(knowledge) if s.strip()]


def shared_record(events: Iterable[Event]) -> list[RecordText]:
    """The texts of the shared record (module docstring), in log order."""
    events = sorted(events, key=lambda e: e.seq)
    sent = {t.seq for t in chat_turns(events)}
    texts = []
    for e in events:
        channel, text = _channel_of(e, sent)
        if channel is not None and text.strip():
            texts.append(RecordText(text_id=event_item(e), seq=e.seq, round=e.round, phase=e.phase,
                                    channel=channel, author=e.participant, text=text))
    return texts


def _channel_of(e: Event, sent: set[int]) -> tuple[Channel | None, str]:
    if e.participant == SYSTEM and e.action in ("memory_frozen", "memory_updated") and "memory" in e.args:
        return "memory", MemoryRecord.model_validate(e.args["memory"]).render(gates=False)
    if e.seq in sent:
        return "chat", str(e.args.get("text", ""))
    if e.phase != "task":
        return None, ""
    if e.status == "pending":
        return "reason", str(e.args.get("text") or e.args.get("code") or e.args.get("reason") or "")
    if is_decision(e):
        return "reason", e.decision_reason or str(e.args.get("reason", ""))
    if e.kind in ("step", "effect") and e.action == "execute_code" and e.cell_index is not None:
        return "cell", str(e.args.get("code", ""))
    if e.kind in ("step", "effect") and e.action == "edit_result" and e.editor_version is not None:
        return "editor", str(e.args.get("text", ""))
    return None, ""


def lexically_conveys(item: PrivateItem, text: str) -> bool:
    """The lexical lower bound: does `text` hold enough of `item`'s distinctive tokens?"""
    if not item.decidable:
        return False
    hits = len(set(item.tokens) & tokens(text))
    return hits >= max(LEXICAL_MIN_HITS, math.ceil(LEXICAL_SHARE * len(item.tokens)))


def lexical_decisions(items: Sequence[PrivateItem], texts: Sequence[RecordText]) -> dict[str, set[str]]:
    """Per text id, the ids of the items it conveys by the lexical bound."""
    return {t.text_id: {i.item_id for i in items if lexically_conveys(i, t.text)} for t in texts}

