"""The variant audit: the variants differ only by design, in what they are shown (`render`)
and in what they do (`behaviour`, a scripted trajectory played in every variant with the
audit's own test double, `double`); `experiment` runs both per settings arm."""

from colabkit.runner.audit.behaviour import audit_behaviour
from colabkit.runner.audit.experiment import audit, audit_experiment
from colabkit.runner.audit.render import RULES, AuditReport, Finding, audit_specs, factors, sections

__all__ = ["RULES", "AuditReport", "Finding", "audit", "audit_behaviour", "audit_experiment", "audit_specs", "factors",
           "sections"]
