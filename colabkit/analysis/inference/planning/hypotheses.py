"""The study's claims as hypotheses, and the graph that spends one alpha over all of them.

The seed paper makes four claims; each is a hypothesis here, with its test, metric and
direction, so the plan can declare it (or not) at one study-wise error rate:

- **H1 process loss**: Default teams do not exceed the single agent (`H1.no-gain`:
  non-superiority, Default-c - Single < `NO_GAIN_MARGIN` in each composition); Default-DR is
  the worst (`H1.dr`: below Single, Default-D and Default-R, an intersection).
- **H2 structure**: Scaffolded beats Default on Performance, pooled over the compositions
  (the mean of the three paired differences of a task and seed) and per composition; the
  gain is largest in DR (`H2.largest`: the composition-by-structure interaction, DR's gain
  above D's and above R's).
- **H3 decomposition**: memory alone raises initiative entropy (Memory - Default on
  H_init,norm, pooled); preassigned gates alone raise hypothesis support (Preassigned -
  Default on S_hyp, pooled); synergy in DR (`H3.synergy`, one claim over both decomposition
  rows: Scaffolded-DR above Memory-DR and above Preassigned-DR on Performance).
- **H4 redistribution**: W_total stays (Scaffolded-DR - Default-DR equivalent within
  `margin_sd` of the between-task SD of the difference) while W_human rises.
- **H5 living memory** (when the Dynamic variants are planned): Dynamic - Scaffolded on
  Performance, pooled, either direction.

A hypothesis names its variants (`a`, `b`: a variant, or a structure, pooled over the
planned compositions), `metric`, `direction` ("greater", "less", "not-greater" with its
`margin`, "two-sided", or "equivalent"), optionally an intersection (`versus`: more B's;
`relative_to`: compositions whose gain A - B must be exceeded; `each`: in every composition,
not pooled: declared only when every comparison is, the largest of their p's), `family` (a label for the tables) and the graph: `weight` (its initial share of
alpha) and `then` (where its level goes once it is declared: hypothesis name -> share). What
a row's `then` leaves unassigned goes, in equal parts, to the exploratory tests: every other
planned test of the plan's families (`colabkit.analysis.inference.planning.families`), Holm among
themselves, tested last, so they too have a procedure-adjusted p and nothing is lost.
A claim the planned variants cannot test leaves the default graph before the data as the
procedure removes a rejected one (its share and edges pass along), so a planned claim reached
only through unplanned ones keeps their level (`default_hypotheses`).

**The default graph, searched from power** (`colabkit.analysis.inference.power_analysis.graph_search`,
`benchmarks/README.md`). Under the paper's effects on the study's data shape the most powerful
claims are memory on H_init,norm (+0.27 to +0.40: near-certain at any share) and the pooled
structure effect (+0.07 on average, its variance shrunk by averaging three compositions); a
declared pooled effect opens Scaffolded-DR (the largest composition, +0.13), synergy behind
it, W_total's equivalence and, with what is left, the rest. Among 16 candidate graphs
(initial weights of memory, pooled and Default-DR the worst, crossed with an even or a
to-power sharing of the level passed on) the one declaring the most of the paper's true
claims in expectation is this one (rerun for the claims as issue 43 words them: the same
choice): memory 0.05 (passed on at once, half to the pooled effect, half to process loss),
the pooled effect 0.95 (then half to Scaffolded-DR, a quarter each to process loss and
W_human), process loss 0 initially (reached from both), and the level passed on mostly to the
claims with power, a tenth to each of those the paper calls within the margin of error
(D +0.03, R +0.05), a fifth to preassigned alone (no published effect); the Dynamic extension
comes last. The price, stated: process loss is declared less often (Default-DR the worst:
0.02 against 0.05 under the first graph) for more of everything behind the pooled effect.
A researcher replaces all of it by
writing their own list (YAML or JSON) for `colabkit plan-analysis --hypotheses FILE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from colabkit.analysis.inference.planning.graph import pass_on
from colabkit.analysis.scores import COMPOSITIONS, STRUCTURES, STUDY_METRICS

Direction = Literal["greater", "less", "not-greater", "two-sided", "equivalent"]
Component = tuple[str, str, float]
"""One paired comparison inside a contrast: (A, B, coefficient) on the same task and seed."""
Contrast = tuple[Component, ...]
"""A linear combination of paired comparisons, estimated from every pair available to each."""


class Hypothesis(BaseModel):
    """One claim: `a` - `b` on `metric` in `direction`; its place in the graph (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    a: str
    b: str
    metric: str = "performance"
    direction: Direction = "greater"
    family: str = "custom"
    weight: float = Field(default=0.0, ge=0, le=1)
    then: dict[str, float] = Field(default_factory=dict)
    margin_sd: float = Field(default=0.5, gt=0)
    """Equivalence only: the margin in units of the between-task SD of the paired difference."""
    margin: float = Field(default=0.0, ge=0)
    """Non-superiority ("not-greater") only: the margin in the metric's units; the claim is A - B < margin."""
    versus: tuple[str, ...] = ()
    """More B's: the claim holds against `b` and against each of these (an intersection)."""
    relative_to: tuple[str, ...] = ()
    """Compositions: A - B in `a`'s composition exceeds the same difference in each of these
    (a composition-by-structure interaction, one per composition, an intersection)."""
    each: bool = False
    """A claim between structures holds in each planned composition (an intersection), not pooled."""
    claim: str = ""

    @property
    def intersection(self) -> bool:
        """Declared only when every one of its comparisons is (an intersection-union test)."""
        return bool(self.versus or self.relative_to or self.each)


def _h(name: str, a: str, b: str, metric: str, direction: Direction, family: str, weight: float = 0.0,
       then: dict[str, float] | None = None, claim: str = "", **more: object) -> Hypothesis:
    return Hypothesis.model_validate({"name": name, "a": a, "b": b, "metric": metric, "direction": direction,
                                      "family": family, "weight": weight, "then": then or {}, "claim": claim,
                                      **more})


NO_GAIN_MARGIN = 0.05
"""The non-superiority margin of "Default teams do not exceed the single agent", in Performance
(the plan's smallest difference of interest, `power_delta`): a Default team is declared not to
exceed Single when its upper bound stays below Single + 0.05."""

PAPER_HYPOTHESES = (
    _h("H3.memory", "memory", "default", "h_init_norm", "greater", "decomposition", 0.05,
       {"H2.pooled": 0.5, "H1.dr": 0.5}, "memory alone raises initiative entropy"),
    _h("H2.pooled", "scaffolded", "default", "performance", "greater", "structure", 0.95,
       {"H2.dr": 0.5, "H1.dr": 0.25, "H4.w_human": 0.25}, "Scaffolded beats Default (pooled over compositions)"),
    _h("H1.dr", "default-dr", "single", "performance", "less", "process-loss", 0.0,
       {"H2.pooled": 0.8, "H1.no-gain": 0.2}, "Default-DR is the worst: below Single, Default-D and Default-R",
       versus=("default-d", "default-r")),
    _h("H1.no-gain", "default", "single", "performance", "not-greater", "process-loss", 0.0,
       {"H1.dr": 0.5, "H2.largest": 0.5}, "Default teams do not exceed the single agent (each composition)",
       margin=NO_GAIN_MARGIN, each=True),
    _h("H2.dr", "scaffolded-dr", "default-dr", "performance", "greater", "structure", 0.0,
       {"H3.synergy": 0.6, "H2.largest": 0.2, "H2.d": 0.1, "H2.r": 0.1}, "Scaffolded-DR beats Default-DR"),
    _h("H2.d", "scaffolded-d", "default-d", "performance", "greater", "structure", 0.0,
       {"H2.r": 0.5, "H4.w_human": 0.5}, "Scaffolded-D beats Default-D"),
    _h("H2.r", "scaffolded-r", "default-r", "performance", "greater", "structure", 0.0,
       {"H2.d": 0.5, "H4.w_human": 0.5}, "Scaffolded-R beats Default-R"),
    _h("H2.largest", "scaffolded-dr", "default-dr", "performance", "greater", "structure", 0.0,
       {"H3.synergy": 0.5, "H4.w_total": 0.5}, "the gain of Scaffolded is largest in DR (above D's and R's)",
       relative_to=("d", "r")),
    _h("H3.synergy", "scaffolded-dr", "memory-dr", "performance", "greater", "decomposition", 0.0,
       {"H2.largest": 0.3, "H4.w_total": 0.5, "H3.preassigned": 0.2},
       "synergy: Scaffolded-DR above memory alone and above preassigned gates alone", versus=("preassigned-dr",)),
    _h("H3.preassigned", "preassigned", "default", "s_hyp", "greater", "decomposition", 0.0,
       {"H4.w_human": 1.0}, "preassigned gates alone raise hypothesis support"),
    _h("H4.w_human", "scaffolded-dr", "default-dr", "w_human", "greater", "redistribution", 0.0,
       {"H4.w_total": 1.0}, "Scaffolding moves work to the humans (W_human up)"),
    _h("H4.w_total", "scaffolded-dr", "default-dr", "w_total", "equivalent", "redistribution", 0.0,
       {"H5.dynamic": 1.0}, "total work stays (W_total equivalent)"),
    _h("H5.dynamic", "dynamic", "scaffolded", "performance", "two-sided", "living-memory", 0.0, {},
       "a living memory changes Performance (beyond the study)"),
)


def _variant(name: str, composition: str) -> str:
    return name if name == "single" or "-" in name else f"{name}-{composition}"


def hypothesis_contrasts(hypothesis: Hypothesis, variants: Sequence[str]) -> list[Contrast]:
    """The contrasts a hypothesis tests among the planned `variants`: one for a pooled claim
    (the mean of its compositions' paired differences) or a single pair; one per comparison
    for an intersection (`versus`, `relative_to`, `each`); [] when nothing of it is planned.
    A pooled claim keeps the compositions that are planned (the claim as far as the planned
    variants can test it); an intersection or a difference of differences is tested whole or
    not at all ([] unless every comparison's variants are planned): "Default-DR is the worst"
    declared from Single alone would read as a decision the procedure did not make."""
    planned = set(variants)
    h = hypothesis
    if "-" in h.a or h.a == "single":
        composition = h.a.split("-")[-1]
        pairs = [(h.a, _variant(b, composition)) for b in (h.b, *h.versus)]
    else:
        pairs = [(_variant(h.a, c), _variant(h.b, c)) for c in COMPOSITIONS[1:]]
        pairs += [(a, _variant(v, a.split("-")[-1])) for v in h.versus for a, _ in pairs[:3]]
    if h.relative_to:
        a, b = pairs[0]
        composition = a.split("-")[-1]
        others = [(a.replace(f"-{composition}", f"-{k}"), b.replace(f"-{composition}", f"-{k}"))
                  for k in h.relative_to]
        found: list[Contrast] = [((a, b, 1.0), (x, y, -1.0)) for x, y in others]
    elif h.intersection:
        found = [((a, b, 1.0),) for a, b in pairs]
    else:
        kept = [(a, b) for a, b in pairs if a in planned and b in planned]
        return [tuple((a, b, 1.0 / len(kept)) for a, b in kept)] if kept else []
    return found if all(a in planned and b in planned for c in found for a, b, _ in c) else []


def variant_pairs(hypothesis: Hypothesis, variants: Sequence[str]) -> list[tuple[str, str]]:
    """The (A, B) variant pairs a hypothesis's contrasts compare among the planned `variants`
    (each once, in order); [] when unplanned."""
    found = [(a, b) for c in hypothesis_contrasts(hypothesis, variants) for a, b, _ in c]
    return list(dict.fromkeys(found))


def check_hypotheses(hypotheses: Sequence[Hypothesis], variants: Sequence[str]) -> None:
    """Fail naming the first problem: a duplicate name, an unknown metric or variant, an edge to
    no hypothesis, two hypotheses testing the same thing, weights or edges summing above 1."""
    names = [h.name for h in hypotheses]
    if len(set(names)) != len(names):
        raise ValueError(f"hypothesis names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    known = {*variants, *STRUCTURES}
    for h in hypotheses:
        if h.metric not in STUDY_METRICS:
            raise ValueError(f"hypothesis {h.name}: unknown metric {h.metric!r}")
        for side in (h.a, h.b):
            if side not in known:
                raise ValueError(f"hypothesis {h.name}: {side!r} is neither a planned variant nor a structure")
        suite = {*known, *(f"{s}-{c}" for s in STRUCTURES[1:] for c in COMPOSITIONS[1:])}
        for side in h.versus:  # a comparison whose variants are not planned is left out of the claim
            if side not in suite:
                raise ValueError(f"hypothesis {h.name}: versus {side!r} is neither a variant nor a structure")
        if set(h.relative_to) - set(COMPOSITIONS[1:]) or (h.relative_to and "-" not in h.a):
            raise ValueError(f"hypothesis {h.name}: relative_to names compositions ({', '.join(COMPOSITIONS[1:])}) "
                             "and needs `a` and `b` of one composition")
        if not hypothesis_contrasts(h, variants):
            raise ValueError(f"hypothesis {h.name}: no planned variant pair for {h.a} - {h.b}")
        missing = sorted(set(h.then) - set(names))
        if missing:
            raise ValueError(f"hypothesis {h.name} passes its level to unknown hypothesis(es) {missing}")
        if sum(h.then.values()) > 1 + 1e-9 or h.name in h.then:
            raise ValueError(f"hypothesis {h.name}: its `then` shares must sum to <= 1 and not name itself")
    tests: dict[tuple[object, ...], str] = {}
    for h in hypotheses:
        other = tests.setdefault(_test_of(h, variants), h.name)
        if other != h.name:
            raise ValueError(f"hypotheses {other} and {h.name} test the same pairs, metric and direction: "
                             "make them one hypothesis")
    if sum(h.weight for h in hypotheses) > 1 + 1e-9:
        raise ValueError(f"initial weights sum to {sum(h.weight for h in hypotheses):.4g} > 1")


def _test_of(h: Hypothesis, variants: Sequence[str]) -> tuple[object, ...]:
    """What a hypothesis tests: its contrasts, metric, direction (and margin)."""
    margin = {"equivalent": h.margin_sd, "not-greater": h.margin}.get(h.direction, 0)
    return (tuple(hypothesis_contrasts(h, variants)), h.metric, h.direction, margin)


def _merge(kept: Hypothesis, dropped: Hypothesis, hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    """`hypotheses` without `dropped`, folded into `kept` (the same test): `kept` takes its weight
    and its edges (the share it passed to `kept` goes on along `kept`'s own edges), and the edges
    into `dropped` now lead to `kept`."""
    through = dropped.then.get(kept.name, 0.0)
    then = {k: v for k, v in dropped.then.items() if k != kept.name}
    for name, share in kept.then.items():
        if name != dropped.name:
            then[name] = then.get(name, 0.0) + through * share
    out = []
    for h in hypotheses:
        if h.name == dropped.name:
            continue
        if h.name == kept.name:
            h = h.model_copy(update={"weight": kept.weight + dropped.weight, "then": then})
        elif dropped.name in h.then:
            edges = {k: v for k, v in h.then.items() if k != dropped.name}
            edges[kept.name] = edges.get(kept.name, 0.0) + h.then[dropped.name]
            h = h.model_copy(update={"then": edges})
        out.append(h)
    return out


def default_hypotheses(variants: Sequence[str]) -> tuple[Hypothesis, ...]:
    """The paper's claims that the planned `variants` can test, in the paper's graph reduced to
    them before the data (`_reduced`). A pooled claim that tests exactly what a composition's
    claim tests (one composition planned: H2.pooled is H2.dr with only DR) is one hypothesis,
    the composition's, holding both places in the graph (`_merge`): the same p is never
    counted twice."""
    kept = _reduced(PAPER_HYPOTHESES, variants)
    for pooled in [h for h in kept if "-" not in h.a and h.a != "single"]:
        same = [h for h in kept if h is not pooled and _test_of(h, variants) == _test_of(pooled, variants)]
        if same:
            kept = _merge(next(h for h in kept if h.name == same[0].name), pooled, kept)
    return tuple(kept)


def _reduced(hypotheses: Sequence[Hypothesis], variants: Sequence[str]) -> list[Hypothesis]:
    """The hypotheses the planned `variants` can test, in the graph with the others removed as
    the procedure removes a rejected one (`graph.pass_on`: their initial share and edges pass
    along the graph, so a claim reached only through an unplanned one keeps its share), weights
    scaled to sum to 1 when the removed ones left some unreachable (or equal when none is left):
    a valid graph, fixed by the planned variants alone, before the data."""
    names = [h.name for h in hypotheses]
    w = np.array([h.weight for h in hypotheses])
    g = np.zeros((len(names), len(names)))
    for i, h in enumerate(hypotheses):
        for name, share in h.then.items():
            g[i, names.index(name)] = share
    active = np.ones(len(names), dtype=bool)
    for i, h in enumerate(hypotheses):
        if not hypothesis_contrasts(h, variants):
            pass_on(i, w, g, active)
    index = [int(i) for i in np.flatnonzero(active)]
    if not index:
        return []
    weights = w[index] / w[index].sum() if w[index].sum() > 1e-12 else np.full(len(index), 1.0 / len(index))
    return [hypotheses[i].model_copy(update={
        "weight": float(np.round(weight, 12)),
        "then": {names[j]: float(np.round(g[i, j], 12)) for j in index if g[i, j] > 1e-12}})
        for i, weight in zip(index, weights)]


def study_graph(hypotheses: Sequence[Hypothesis], exploratory: int) -> tuple[np.ndarray, np.ndarray]:
    """(initial weights, transition matrix) over the hypotheses then `exploratory` tests: the
    hypotheses' own weights and edges, each row's remainder to the exploratory tests equally,
    and Holm among the exploratory tests."""
    k, m = len(hypotheses), len(hypotheses) + exploratory
    index = {h.name: i for i, h in enumerate(hypotheses)}
    weights, g = np.zeros(m), np.zeros((m, m))
    for i, h in enumerate(hypotheses):
        weights[i] = h.weight
        for name, share in h.then.items():
            g[i, index[name]] = share
        if exploratory:
            g[i, k:] = max(0.0, 1.0 - g[i, :k].sum()) / exploratory
    if exploratory > 1:
        g[k:, k:] = 1.0 / (exploratory - 1)
        np.fill_diagonal(g[k:, k:], 0.0)
    return weights, g
