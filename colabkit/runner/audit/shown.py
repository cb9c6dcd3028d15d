"""`shown-as-documented`: what each step's prompt shows, against the rules (`documented`).

Each task step's prompt, as it was sent, is read against the run's events before it: its "Now"
line (round, its budget holder's steps left, the AI agent's to a human), the actions on offer
(`DocumentedRules.own_step_actions`), the common sections present and no other but its
structures' declared ones, the Team section naming the
member and the seats, a message's help naming its teammates; the newest code cells and the
newest messages the member can see (no other message; as many as the profile's count and chat
budget allow; the number left out said), each message headed by its sender and addressees;
other members' activity only to the AI agent and the newest line it may see, as documented;
every list oldest first; the editor's text in force; the member's newest thought (and outside
the timeline layout its most recent thoughts, one a line, as many as the profile's `notes`); its
own last step's outcome ("Your last step"; in the timeline layout only a failed one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colabkit.runner.audit.documented import DocumentedRules, user_prompt
from colabkit.runner.audit.player import MEMBER, TEAM_LINE, Run
from colabkit.runner.audit.projection import sections_of
from colabkit.session.events import Event

_NOW = re.compile(r"^# Now \(round (\d+), (\d+) actions? left for ([^;)]+)(?:; (\d+) for the AI agent \(ai\))?\)", re.M)
_OLDER = re.compile(r"(\d+) older (cells|messages|actions) not shown")
_ITEMS = {  # how each listed item starts, by kind (its key: the kind and the groups)
    "cell": re.compile(r"^\[cell (\d+) by ", re.M),
    "message": re.compile(r"^\[#(\d+) ", re.M),
    "activity": re.compile(r"^\[activity\] r(\d+) (\S+) (\S+)", re.M),
    "thought": re.compile(r"^(?:\[your private thought, |- )r(\d+)(?: -> |\s)([a-z_]+)[\]:]", re.M),
}
_ACTIVITY = re.compile(r"^r(\d+) (\S+) (\S+)", re.M)
"""An activity line, as the Activity section lists it (the timeline's follow "[activity] ")."""
_HEAD = re.compile(r"^\[#(\d+) (\S+) -> ([^\]]*)\]", re.M)
COMMON_SECTIONS = ("Your private briefing", "Team", "Valid actions", "Code cells", "Result editor")
"""The common sections every step's prompt has (docs/fidelity.md, "What is common"; the task may
be stated in the briefing instead of a section of its own)."""
_COMMON_TITLES = (*COMMON_SECTIONS, "Task", "Activity", "Your recent thoughts", "Your last step", "Now")
"""Every section the common part may show (the rest are a structure's, declared: `Structure.sections`)."""
_DONE_ELSEWHERE = ("send_message", "execute_code")
"""Actions whose effect has a section of its own (the chat, the notebook): not activity lines."""


def shown(rules: DocumentedRules, run: Run) -> list[str]:
    """Every step's prompt against the rules (the module docstring)."""
    out: list[str] = []
    steps = {e.seq for e in rules.steps}
    for e, call in run.calls_by_event():
        if e is None or e.seq not in steps or not call["messages"]:
            continue
        steps.discard(e.seq)  # its first request: a repair's asks for the answer again
        before = [x for x in run.events if x.seq < e.seq and x.phase == "task"]
        out += [f"{e.participant}'s prompt in round {e.round}: {text}"
                for text in _prompt(rules, e, user_prompt(call), before)]
    return out


def _prompt(rules: DocumentedRules, e: Event, prompt: str, before: list[Event]) -> list[str]:
    pid, profile = e.participant, rules.profile
    parts = dict(sections_of(prompt))
    now = _NOW.search(prompt)
    if now is None:
        return ["no '# Now' line"]
    out = _frame(rules, e, now, parts)
    notebook = next((text for title, text in parts.items() if title.startswith("Code cells")), "")
    activity = notebook if profile.timeline else parts.get("Activity", "")
    made = _made(before, pid)
    for section, bare in ((notebook, False), (parts.get("Activity", ""), True), (parts.get("Your recent thoughts", ""), False)):
        out += _oldest_first(section, made, bare)
    cells = sorted({x.cell_index for x in before if x.cell_index is not None and x.kind in ("step", "effect")})
    out += _newest("cells", cells, [int(i) for i in _ITEMS["cell"].findall(notebook)], notebook, profile.cells)
    out += _messages(rules, pid, before, notebook)
    out += _activity(rules, pid, before, activity)
    out += _editor(before, parts.get("Result editor", ""), profile.editor_chars)
    out += _thoughts(rules, [x.thought for x in before if x.participant == pid and x.kind == "step"
                             and x.thought is not None], prompt, parts.get("Your recent thoughts", ""))
    shown_cells = {int(i) for i in _ITEMS["cell"].findall(notebook)}
    return out + _last_step(pid, before, parts.get("Your last step"), profile.timeline, prompt, shown_cells)


def _frame(rules: DocumentedRules, e: Event, now: re.Match[str], parts: dict[str, str]) -> list[str]:
    """The sections, the Team line, the valid actions' help and the "Now" line."""
    pid, out = e.participant, []
    layout = () if rules.profile.timeline else ("Activity",)
    missing = [t for t in COMMON_SECTIONS + layout if not any(k.startswith(t) for k in parts)]
    if missing:
        out.append(f"no {', '.join(missing)} section")
    extra = [t for t in parts if t and not t.startswith(_COMMON_TITLES + rules.sections)]
    if extra:
        out.append(f"sections neither common nor its structures' ({', '.join(extra)})")
    team = TEAM_LINE.search(parts.get("Team", ""))
    if team is None or team[1] != pid or MEMBER.findall(team[2]) != list(rules.team):
        out.append(f"its Team section does not name it and the team {list(rules.team)}")
    valid = parts.get("Valid actions", "")
    mates = re.search(r"^- send_message:.*\(([^)]*)\)$", valid, re.M)
    if mates is not None and mates[1].split(", ") != [p for p in rules.team if p != pid]:
        out.append(f"its message help names ({mates[1]}), not its teammates")
    offered = set(re.findall(r"^- ([a-z_]+):", valid, re.M))
    if offered != rules.own_step_actions(pid):
        out.append(f"its own step offers {sorted(offered)}; the rules offer {sorted(rules.own_step_actions(pid))}")
    at = rules.at(e)
    side = [p for p in rules.team if rules.holder(p) == rules.holder(pid)]
    whose = "you" if len(side) == 1 else f"{' and '.join(side)} together"
    ai_left = str(rules.left("ai", at)) if pid != "ai" and "ai" in rules.team else None
    said = (int(now[1]), int(now[2]), now[3], now[4])
    if said != (e.round, rules.left(pid, at), whose, ai_left):
        out.append(f"'# Now' says round {said[0]}, {said[1]} left for {said[2]}, {said[3]} for the AI; the rules: "
                   f"round {e.round}, {rules.left(pid, at)} for {whose}, {ai_left}")
    return out


def _made(before: list[Event], pid: str) -> dict[tuple[str, ...], int]:
    """Each listable item's key (`_ITEMS`) and when it was made (a thought with its step)."""
    made: dict[tuple[str, ...], int] = {}
    for x in before:
        if x.cell_index is not None:
            made[("cell", str(x.cell_index))] = x.seq
        if x.message_index is not None:
            made[("message", str(x.message_index))] = x.seq
        if x.kind in ("step", "effect"):
            made[("activity", str(x.round), x.participant, x.action)] = x.seq
        if x.kind == "step" and x.participant == pid:
            made[("thought", str(x.round), x.action)] = x.seq
    return made


def _oldest_first(section: str, made: dict[tuple[str, ...], int], bare: bool) -> list[str]:
    """A section lists its items oldest first, in the order they were made (`bare`: the Activity
    section's lines, without the timeline's "[activity] ")."""
    patterns = {**_ITEMS, "activity": _ACTIVITY} if bare else _ITEMS
    found = [(m.start(), (kind, *m.groups())) for kind, pattern in patterns.items() for m in pattern.finditer(section)]
    listed = [item for _, item in sorted(found)]
    order = [made.get(item, -1) for item in listed]
    return [] if order == sorted(order) else [f"a section lists {listed[:8]}, not oldest first"]


def _newest(noun: str, have: Sequence[int | None], listed: list[int], section: str, limit: int | None) -> list[str]:
    """The shown items are the newest of those the member may see, within the count, the rest counted."""
    older = next((int(n) for n, what in _OLDER.findall(section) if what == noun), 0)
    out = []
    newest = list(have[len(have) - len(listed):]) if listed else []
    if listed != newest or (have and not listed and limit != 0):
        out.append(f"{noun} shown {listed}, of {list(have)} it may see: not the newest")
    if len(listed) + older != len(have):
        out.append(f"{len(listed)} {noun} shown and {older} said left out, of {len(have)}")
    if limit is not None and len(listed) > limit:
        out.append(f"{len(listed)} {noun} shown, over the profile's {limit}")
    return out


def _messages(rules: DocumentedRules, pid: str, before: list[Event], notebook: str) -> list[str]:
    """The messages it may see, the newest that fit the profile's count and chat budget (each at
    most `message_chars` long, 20 characters more for its head; the newest always), headed
    `[#<index> <sender> -> <addressees or all>]`."""
    profile = rules.profile
    mail = [x for x in before if x.message_index is not None and x.kind in ("step", "effect")]
    visible = [x for x in mail if rules.sees(pid, x)]
    heads = {int(m[1]): (m[2], m[3]) for m in _HEAD.finditer(notebook)}
    out = _newest("messages", [x.message_index for x in visible], list(heads), notebook, profile.messages)
    fit, used = 0, 0
    for x in reversed(visible[-profile.messages:] if profile.messages is not None else visible):
        text = str(x.args.get("text", "")).strip()
        used += min(len(text), profile.message_chars or len(text)) + 20
        if profile.chat_chars is not None and fit and used > profile.chat_chars:
            break
        fit += 1
    if len(heads) != fit:
        out.append(f"{len(heads)} messages shown where the profile fits {fit}")
    for x in visible:
        to = x.args.get("to")
        want = (x.proposer or x.participant, ",".join(to) if to else "all")
        if x.message_index in heads and heads[x.message_index] != want:
            out.append(f"message #{x.message_index} is headed {heads[x.message_index]}, not {want}")
    return out


def _activity(rules: DocumentedRules, pid: str, before: list[Event], section: str) -> list[str]:
    """Only what it may see (the AI agent everyone's, a human its own), the newest line as documented."""
    rows = [line.removeprefix("[activity] ") for line in section.splitlines()
            if line.startswith("[activity] ") or not rules.profile.timeline]
    lines = [m for m in map(_ACTIVITY.match, rows) if m]
    done = [x for x in before if x.kind in ("step", "effect") and x.participant in rules.team
            and (rules.role[pid] == "ai" or x.participant == pid) and x.status not in ("failed_step", "pending")
            and x.action != "wait" and not (x.action in _DONE_ELSEWHERE and x.status in ("ok", "error"))]
    may = {(str(x.round), x.participant, x.action) for x in done}
    out = [f"shows an activity line it may not see ({m.string[:60]!r})" for m in lines if m.groups() not in may]
    keep = rules.profile.activity
    if done and (keep is None or keep > 0):
        line = activity_line(done[-1])[:rules.profile.activity_chars].rstrip()
        if not any(m.string.startswith(line) for m in lines):
            out.append(f"the newest activity it may see ({line[:60]!r}) is not shown as such")
    return out


def activity_line(e: Event) -> str:
    """An activity line as documented: `r<round> <member> <action>[ <request id>] -> <status>[: <its
    text, code or reason, on one line>]` (an effect reads as its proposer's step, without the id)."""
    held = f" {e.request_id}" if e.request_id and e.kind != "effect" else ""
    payload = next((str(e.args[k]) for k in ("text", "code", "reason") if e.args.get(k)), "")
    return f"r{e.round} {e.participant} {e.action}{held} -> {e.status}" + (f": {' '.join(payload.split())}"
                                                                          if payload else "")


def _thoughts(rules: DocumentedRules, thoughts: list[str], prompt: str, section: str) -> list[str]:
    """Its newest thought is shown; after the timeline, its most recent `notes` thoughts, one a line."""
    profile, out = rules.profile, []
    room = None if profile.note_chars is None else profile.note_chars - 40  # its line starts "r<round> <action>: "
    said = [t for t in thoughts if t]
    if said and profile.notes != 0 and (room is None or room > 0) and not _has(prompt, said[-1], room):
        out.append(f"its newest thought ({said[-1][:40]!r}) is not shown")
    if profile.notes is not None and len(_ITEMS["thought"].findall(section)) != min(len(thoughts), profile.notes):
        out.append(f"{len(_ITEMS['thought'].findall(section))} thought lines, of {len(thoughts)} thoughts "
                   f"(the profile shows {profile.notes})")
    return out


def _editor(before: list[Event], section: str, limit: int | None) -> list[str]:
    edits = [x for x in before if x.editor_version is not None and x.kind in ("step", "effect")]
    body = section.split("\n", 1)[1] if "\n" in section else ""
    if not edits:
        return [] if body.strip() == "(empty)" else [f"the editor shows {body[:40]!r} before any edit"]
    text = str(edits[-1].args.get("text", ""))
    return [] if _has(body, text, limit, start=True) else [f"the editor shows {body[:40]!r}, not the text in "
                                                          f"force {text.strip()[:40]!r}"]


def _last_step(pid: str, before: list[Event], section: str | None, timeline: bool, prompt: str,
               shown_cells: set[int]) -> list[str]:
    """Its own last step's outcome, `<action> -> <status>`; a cell it ran that is shown above by
    its index ("cell <k> (shown above)"), not repeated."""
    own = [x for x in before if x.participant == pid]
    steps = [x for x in own if x.kind == "step"]
    if not steps:
        return [] if section is None else ["'Your last step' shown before any step"]
    last = steps[-1]
    if last.status == "pending" and last.request_id is not None:  # held: its effect, once it took effect
        last = next((x for x in own if x.kind == "effect" and x.request_id == last.request_id), last)
    outcome = f"{last.action} -> {last.status}"
    if timeline and last.status != "failed_step":
        return []
    where = prompt if timeline else section or ""
    if last.cell_index in shown_cells:
        outcome += f": cell {last.cell_index} (shown above)"
    return [] if outcome in where else [f"its last step ({outcome}) is not said"]


def _has(text: str, item: str, limit: int | None, start: bool = False) -> bool:
    """Whether `item` (cut as the profile cuts it) is in `text` (at its start, with `start`)."""
    item = item.strip()
    head = item[:min(24, len(item), limit if limit is not None else len(item))].rstrip()
    return text.strip().startswith(head) if start else head in text
