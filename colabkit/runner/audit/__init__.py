"""The variant audit: the variants differ only by design, in what they are first shown
(`render`) and in what they do (`hunt`: generated scenarios, `scenario`, played with the
audit's own test double, `player`, served over HTTP by `wire`, and checked against invariants,
`invariants`, `probe` and the whole-trace comparison with each variant's Default twin, `trace`);
`experiment` runs both per settings arm."""

from colabkit.runner.audit.experiment import audit, audit_experiment
from colabkit.runner.audit.hunt import HuntReport, hunt
from colabkit.runner.audit.invariants import INVARIANTS
from colabkit.runner.audit.render import RULES, AuditReport, Finding, audit_specs, factors, sections
from colabkit.runner.audit.scenario import Policy, Scenario
from colabkit.runner.audit.violation import Violation

__all__ = ["INVARIANTS", "RULES", "AuditReport", "Finding", "HuntReport", "Policy", "Scenario", "Violation", "audit",
           "audit_experiment", "audit_specs", "factors", "hunt", "sections"]
