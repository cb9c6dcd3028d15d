"""The variant audit: proof, per experiment, that variants differ only where the design says.

The study's claim is that "the only variables are the persona prompts and the collaboration
structure". For one task and seed, `audit_specs` renders what every participant of every
variant is given (`colabkit.session.prompting.preview`: the build-phase prompts, the first task-phase
system prompt and observation, the valid actions, the budget, the termination rule, the
observation profile, the model and the settings), splits each prompt into named sections and
compares the variants section by section. No model is called: one fixed placeholder stands
in for every model output a prompt needs, so only structure can make two variants differ.

Every section has the causes allowed to change it (`RULES`): whether it is shown at all
(`presence`) and what it says (`text`). The causes are the study's design factors of a
variant (`factors`): (a) which personas are on the team and their prompts, (b) the memory
(its section and build phase; beyond the study, whether it lives: Dynamic), (c) the gate rules
and who chose them. Two variants whose
allowed causes for a section are equal must show that section identically, or not at all;
anything else is an unexplained difference (`Finding`: the section, the participant, the
variants and their texts). A section missing from `RULES` has no allowed cause, so a new
section shown to some variants only, or a prompt line added for one, is always found.

The human personas are also compared with each other (`persona_frame`): apart from their
role and knowledge lines, every line one has and another lacks is a finding; a knowledge
line holding a normative cue (`NORMATIVE_CUES`: "a sound answer must respect") is one too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from colabkit.runner.audit.rules import CAUSES, NO_CAUSE, RULES, Rule
from colabkit.session import SessionSpec
from colabkit.session.prompting.preview import ParticipantPreview, Prompt, preview
from colabkit.session.structure.base import Structure
from colabkit.session.structure.gating import HELD_SECTIONS, SET_BY
from colabkit.session.structure.registry import plugin_structures
from colabkit.tasks import Task
from colabkit.team import VariantConfig
from colabkit.team.memory import GATES_LINE, TEAM_LINE
from colabkit.team.personas import KNOWLEDGE_LINE, persona_frame

if TYPE_CHECKING:
    from colabkit.runner.audit.hunt import HuntReport

# Lines of a section that are a section of their own (with causes of their own): section ->
# {line prefix: sub-section name}.
SUBSECTIONS = {
    "Gate rules": {SET_BY["self"].split(":")[0] + ":": "set by"},
    "Memory build": {TEAM_LINE: "team", GATES_LINE: "gates"},
}


NORMATIVE_CUES = frozenset({"must", "should", "sound", "correct", "respect", "right", "wrong", "valid", "proper"})
"""Words that tell a persona what a good answer is: a knowledge line names what it knows, only."""


PLUGIN = "structure:"
"""The cause of a plugin structure's own differences: `structure:<name>` (its options with it)."""


def factors(variant: VariantConfig) -> dict[str, object]:
    """The design factors of a variant: the only things allowed to make prompts differ; a plugin
    structure is a factor of its own (`structure:<name>`: its options where the variant plays
    it, absent elsewhere), allowed only in the sections and actions it declares (`plugin_rule`)."""
    return {
        **{f"{PLUGIN}{s.name}": json.dumps(s.options, sort_keys=True, default=repr) for s in plugin_structures(variant)},
        "team": variant.humans,
        "personas": tuple((p.id, p.version, p.prompt, p.knows) for p in variant.team_personas()),
        "memory": variant.memory,
        "gated": variant.gate_source != "none",
        "gate_chooser": variant.gate_source,
        "living": variant.memory_updates,
    }


def _prompt_sections(prompt: Prompt) -> dict[str, str]:
    """A prompt as named sections: the system prompt's paragraphs, the user text's `# ` sections."""
    out = {f"{prompt.stage}: system {i}": part for i, part in enumerate(prompt.system.split("\n\n"), 1)}
    for part in re.split(r"\n\n(?=# )", prompt.user):
        heading, _, body = part.partition("\n")
        title = heading.removeprefix("# ")
        name = title if title.startswith("Consolidated memory") else re.split(r" \(|:", title)[0].strip()
        if name == "Shared Group Memory":  # the digest is a hash of the slots shown right below it
            part = re.sub(r"(frozen|version \d+) [0-9a-f]{8}", r"\1 <digest>", part)
        for prefix, sub in SUBSECTIONS.get(name, {}).items():  # e.g. who set the gates: a cause of its own
            lines = [line for line in body.splitlines() if line.startswith(prefix)]
            if lines:
                out[f"{prompt.stage}: {name} ({sub} line)"] = "\n".join(lines)
            part = "\n".join(line for line in part.splitlines() if not line.startswith(prefix))
        out[f"{prompt.stage}: {name}"] = part
    return out


def sections(spec: SessionSpec, view: ParticipantPreview) -> dict[str, str]:
    """Everything `view`'s participant is given under `spec`, as named sections."""
    out: dict[str, str] = {}
    for prompt in (*view.build, view.task):
        out.update(_prompt_sections(prompt))
    settings = spec.settings
    out.update({
        "facts: valid actions": ", ".join(view.valid_actions),
        "facts: budget": f"{view.side} side: {view.budget} steps ({view.actions_left} left at the first step)"
                         + (f"; team cap {settings.team_action_budget}" if settings.team_action_budget else ""),
        "facts: termination": settings.termination,
        "facts: settings": json.dumps(settings.model_dump(mode="json"), sort_keys=True),
        "facts: profile": json.dumps(spec.profile.model_dump(mode="json"), sort_keys=True),
        "facts: model": json.dumps(spec.model_for(view.participant).model_dump(mode="json"), sort_keys=True),
        "facts: persona version": view.persona_version,
    })
    return out


@dataclass(frozen=True)
class Finding:
    """An unexplained difference: `texts` maps each group of variants to what it shows (None: absent)."""

    section: str
    participant: str
    texts: tuple[tuple[tuple[str, ...], str | None], ...]

    def render(self) -> str:
        lines = [f"UNEXPLAINED {self.section} [{self.participant}]:"]
        common = set.intersection(*(set((t or "").splitlines()) for _, t in self.texts))
        for variants, text in self.texts:
            shown = "(not shown)" if text is None else "\n      ".join(
                line for line in text.splitlines() if line not in common) or "(same lines, other order)"
            lines.append(f"    {', '.join(variants)}: {shown}")
        return "\n".join(lines)


@dataclass
class Allowed:
    """A section that differs between variants (`kind` "shown": shown to some only; "text":
    worded differently), the variants involved and the design causes that explain it."""

    section: str
    kind: str
    participants: set[str] = field(default_factory=set)
    causes: set[str] = field(default_factory=set)
    variants: set[str] = field(default_factory=set)  # "shown": the variants showing it; "text": all involved
    texts: set[str] = field(default_factory=set)


@dataclass
class AuditReport:
    """What differs between the variants: explained (`allowed`) and unexplained (`findings`)."""

    task_id: str
    seed: int
    variants: tuple[str, ...]
    allowed: dict[tuple[str, str], Allowed]
    findings: list[Finding]
    uncompared: set[str] = field(default_factory=set)
    """Sections shown to several variants of which no two share the section's allowed causes:
    their texts are explained by construction, never checked against another variant's."""
    hunt: HuntReport | None = None
    """The hunt over the same variants (`colabkit.runner.audit.hunt`), when run."""

    @property
    def ok(self) -> bool:
        return not self.findings and (self.hunt is None or self.hunt.ok)

    def table(self) -> str:
        """The allowed differences as a Markdown table; sections that differ alike share a row."""
        rows: dict[tuple[str, str, str], list[str]] = {}
        for (section, _), item in sorted(self.allowed.items()):
            how = (f"shown to {_families(item.variants, self.variants)} only" if item.kind == "shown"
                   else f"{len(item.texts)} wordings over {_families(item.variants, self.variants)}")
            row = (", ".join(sorted(item.participants)), how, "; ".join(cause_text(c) for c in sorted(item.causes)))
            rows.setdefault(row, []).append(section)
        lines = ["| sections | participants | how they differ | allowed cause |", "|---|---|---|---|"]
        for (who, how, why), sections in rows.items():
            lines.append(f"| {_stages(sections)} | {who} | {how} | {why} |")
        return "\n".join(lines)

    def render(self) -> str:
        head = (f"variant audit: {len(self.variants)} variants on task {self.task_id}, seed {self.seed}: "
                f"{len(self.allowed)} sections differ for allowed causes, {len(self.findings)} unexplained")
        note = [f"not compared (no two variants share their allowed causes): {_stages(sorted(self.uncompared))}"]
        text = "\n".join([head, "", self.table(), "", *(note if self.uncompared else []),
                           *([f.render() for f in self.findings] or ["no unexplained difference"])])
        if self.hunt is None:
            return text
        return text + "\n\n" + self.hunt.render()


def audit_specs(specs: Sequence[SessionSpec], task: Task) -> AuditReport:
    """Compare what each spec's participants are given (one spec per variant, same task and seed)."""
    names = [spec.variant.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"one spec per variant, got {names}")
    shown = {spec.variant.name: {pid: sections(spec, view) for pid, view in preview(spec, task).items()}
             for spec in specs}
    plugins = {type(s) for spec in specs for s in plugin_structures(spec.variant)}
    report = compare_variants(specs, shown, lambda key, pid: plugin_rule(RULES.get(key, NO_CAUSE), key, plugins))
    report.findings += _persona_findings(specs)
    return report


def plugin_rule(rule: Rule, key: str, plugins: set[type[Structure]]) -> Rule:
    """`rule` with the plugin structures' causes added where they declared the difference: a
    section they add (`Structure.sections`, shown or worded by them; with `holds`, the held
    requests' sections) and, for the actions they add (`Structure.actions`), the valid actions.
    Nothing else may differ by a plugin."""
    stage, _, name = key.partition(": ")
    presence, text = set(rule.presence), set(rule.text)
    for cls in plugins:
        cause = f"{PLUGIN}{cls.name}"
        if stage == "task" and (name in cls.sections or (cls.holds and name in HELD_SECTIONS)):
            presence.add(cause)
            text.add(cause)
        if cls.actions and key in ("task: Valid actions", "facts: valid actions"):
            text.add(cause)
    return Rule(frozenset(presence), frozenset(text))


def cause_text(cause: str) -> str:
    """How the report names a cause (a plugin structure's by its name)."""
    if cause.startswith(PLUGIN):
        return f"(d) the structure {cause[len(PLUGIN):]!r}: its declared sections and actions"
    return CAUSES[cause]


def compare_variants(specs: Sequence[SessionSpec], shown: dict[str, dict[str, dict[str, str]]],
                     rule_for: Callable[[str, str], Rule]) -> AuditReport:
    """Compare named sections per participant across variants (`shown`: variant -> participant
    -> section -> text), each under the causes `rule_for(section, participant)` allows."""
    names = [spec.variant.name for spec in specs]
    design = {spec.variant.name: factors(spec.variant) for spec in specs}
    allowed: dict[tuple[str, str], Allowed] = {}
    findings: list[Finding] = []
    compared: dict[str, bool] = {}
    for pid in sorted({pid for views in shown.values() for pid in views}):
        having = [v for v in names if pid in shown[v]]
        for key in sorted({k for v in having for k in shown[v][pid]}):
            rule = rule_for(key, pid)
            texts = {v: shown[v][pid].get(key) for v in having}
            findings += _compare(key, "shown", pid, texts, design, rule.presence, allowed)[0]
            present: dict[str, str | None] = {v: t for v, t in texts.items() if t is not None}
            found, checked = _compare(key, "text", pid, present, design, rule.text, allowed)
            findings += found
            compared[key] = compared.get(key, False) or checked or len(present) < 2
    return AuditReport(task_id=specs[0].task_id if specs else "", seed=specs[0].seed if specs else 0,
                       variants=tuple(names), allowed=allowed, findings=findings,
                       uncompared={key for key, checked in compared.items() if not checked})


def _compare(key: str, kind: str, pid: str, texts: dict[str, str | None], design: dict[str, dict[str, object]],
             causes: frozenset[str], allowed: dict[tuple[str, str], Allowed]) -> tuple[list[Finding], bool]:
    """Variants equal in `causes` must agree (on whether the section is shown, for `kind`
    "shown"; on its text, for "text"); record the differences a cause explains. Also says
    whether any two variants were compared (shared the causes)."""
    view: dict[str, object] = {v: (t is not None) if kind == "shown" else t for v, t in texts.items()}
    for a, b in combinations(texts, 2):
        if view[a] != view[b]:
            why = {c for c in causes if design[a].get(c) != design[b].get(c)}
            if why:
                item = allowed.setdefault((key, kind), Allowed(key, kind))
                item.participants.add(pid)
                item.causes |= why
                if kind == "shown":
                    item.variants |= {v for v in (a, b) if texts[v] is not None}
                else:
                    item.variants |= {a, b}
                    item.texts |= {str(texts[a]), str(texts[b])}
    groups: dict[tuple, list[str]] = {}
    for v in texts:
        groups.setdefault(tuple(repr(design[v].get(c)) for c in sorted(causes)), []).append(v)
    out = []
    for members in groups.values():
        clusters: dict[object, list[str]] = {}
        for v in members:
            clusters.setdefault(view[v], []).append(v)
        if len(clusters) > 1:
            out.append(Finding(key, pid, tuple((tuple(vs), texts[vs[0]]) for vs in clusters.values())))
    return out, any(len(members) > 1 for members in groups.values())


def _persona_findings(specs: Sequence[SessionSpec]) -> list[Finding]:
    """Human personas must share one frame: only their role and knowledge lines may differ."""
    where: dict[tuple[str, str], list[str]] = {}
    personas = {}
    for spec in specs:
        for p in spec.variant.team_personas():
            if p.role == "human":
                personas[(p.id, p.prompt)] = p
                where.setdefault((p.id, p.prompt), []).append(spec.variant.name)
    out = []
    for (ka, a), (kb, b) in combinations(personas.items(), 2):
        fa, fb = persona_frame(a), persona_frame(b)
        if fa != fb:
            only_a = "\n".join(line for line in fa if line not in fb) or "(same lines, other order)"
            only_b = "\n".join(line for line in fb if line not in fa) or "(same lines, other order)"
            out.append(Finding(f"persona frame: {a.id} ({a.version}) vs {b.id} ({b.version})", f"{a.id}/{b.id}",
                               ((tuple(where[ka]), only_a), (tuple(where[kb]), only_b))))
    for key, p in personas.items():  # the knowledge lines may differ in topic, never in tone
        line = next((ln.strip() for ln in p.prompt.splitlines() if ln.strip().startswith(KNOWLEDGE_LINE)), "")
        cues = sorted(set(re.findall(r"[a-z]+", line.lower())) & NORMATIVE_CUES)
        if cues:
            out.append(Finding(f"persona knowledge line: {p.id} ({p.version}) has normative cue(s) {', '.join(cues)}",
                               p.id, ((tuple(where[key]), line),)))
    return out


def _families(chosen: set[str], everyone: Sequence[str]) -> str:
    """Variant names, with a family written `family-*` when all its variants are there."""
    families: dict[str, list[str]] = {}
    for name in everyone:
        families.setdefault(name.split("-")[0], []).append(name)
    out = []
    for family, members in families.items():
        have = [m for m in members if m in chosen]
        out += [f"{family}-*"] if len(members) > 1 and len(have) == len(members) else have
    return ", ".join(out)


def _stages(sections: list[str]) -> str:
    """Section keys grouped by stage: `task: Team, Now; propose: Task`."""
    by_stage: dict[str, list[str]] = {}
    for key in sections:
        stage, _, name = key.partition(": ")
        by_stage.setdefault(stage, []).append(name)
    return "; ".join(f"{stage}: {', '.join(names)}" for stage, names in by_stage.items())
