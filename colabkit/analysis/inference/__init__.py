"""The statistics: task-level contrasts, the mixed model, Holm families and power."""
