"""The metrics' scorers: each module registers the scorers of one metric family."""
