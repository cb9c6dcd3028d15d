"""Reference workflow graphs (data files), one per DiscoveryBench workflow-tag family.

Loaded and validated by `colabkit.evaluation.metrics.workflow.load_workflows`; see the README here.
"""
