"""How human are the simulated humans? Behaviour fingerprints and fidelity cards.

- `fingerprints`: one row per (session, human seat) from the stored events, `FEATURES`
  defined in `FEATURE_DOCS`; who played the seat (`kind`: person or simulated; `simulator`).
- `standardised_differences`, `classifier_test`, `chamfer_coverage`: two samples held
  against each other (`compare`).
- `person_cards`, `persona_cards`, `card_summary`: fidelity cards, people vs each simulator
  per persona, and simulated D vs R (`card`); `outside_cards` for people from elsewhere.
- `with_simulators`, `by_simulator`, `simulator_effect`, `contrasts_by_simulator`: outcomes
  and the study's contrasts per simulator of a sweep; `simulator_failures`: the judged
  simulator-caused failures counted per variant (`simulators`).
- `cogym_tables`: Co-Gym real-condition trajectories (`event_log.jsonl`) as events and
  sessions tables, fingerprinted like colabkit's own (`cogym`).
- `recllmsim_tables`, `simulatorarena_tables`: public corpora of real (and simulated) users,
  read from local copies into the same tables with their licence and attribution
  (`recllmsim`, `simulatorarena`, `corpora`); `corpus_fingerprints` adds who the user was;
  `recllmsim_people`: RecLLMSim's people as fingerprints in each seat.
- `calibrate`: the noise floor (two halves of the people) and the signal (people vs simulated
  users) per feature and combined (`calibration`); `load_calibration`: the points shipped in
  the package, which every card is placed against (`scale`; `scale_summary`); `people_needed`: person
  sessions for an AUC interval of a given width.
"""

from colabkit.analysis.realism.calibration import auc_interval_width, calibrate, people_needed
from colabkit.analysis.realism.card import (
    FidelityCard,
    card_outputs,
    card_summary,
    make_card,
    outside_cards,
    person_cards,
    persona_cards,
    scale_summary,
)
from colabkit.analysis.realism.cogym import cogym_tables
from colabkit.analysis.realism.compare import (
    ClassifierTest,
    chamfer_coverage,
    classifier_test,
    standardised_differences,
)
from colabkit.analysis.realism.corpora import corpus_fingerprints
from colabkit.analysis.realism.fingerprints import FEATURE_DOCS, FEATURES, fingerprints, stored_fingerprints
from colabkit.analysis.realism.recllmsim import recllmsim_people, recllmsim_tables
from colabkit.analysis.realism.scale import CalibrationPoints, load_calibration, place
from colabkit.analysis.realism.simulatorarena import simulatorarena_tables
from colabkit.analysis.realism.simulators import (
    by_simulator,
    contrasts_by_simulator,
    simulator_effect,
    simulator_failures,
    simulators,
    stored_sessions,
    with_simulators,
)

__all__ = [
    "FEATURES",
    "FEATURE_DOCS",
    "CalibrationPoints",
    "ClassifierTest",
    "FidelityCard",
    "auc_interval_width",
    "by_simulator",
    "calibrate",
    "card_outputs",
    "card_summary",
    "chamfer_coverage",
    "classifier_test",
    "cogym_tables",
    "contrasts_by_simulator",
    "corpus_fingerprints",
    "fingerprints",
    "load_calibration",
    "make_card",
    "outside_cards",
    "people_needed",
    "person_cards",
    "persona_cards",
    "place",
    "recllmsim_people",
    "recllmsim_tables",
    "scale_summary",
    "simulator_effect",
    "simulator_failures",
    "simulatorarena_tables",
    "simulators",
    "standardised_differences",
    "stored_fingerprints",
    "stored_sessions",
    "with_simulators",
]
