"""The statistics, in four rooms by what they are (each depends only on the rooms above it):

- `planning`: the analysis plan fixed before the data: its hypotheses, families, the graph
  that spends one alpha over them, and the plan file that locks it;
- `estimation`: the arithmetic of one estimate or test: clustered means, the mixed model and
  its REML boundary fit, the sign-flip test, the missing-score bounds;
- `decisions`: every planned test through the plan's graph, and the tables that report the
  contrasts and their decisions (the study's, and across session-end rules);
- `power_analysis`: how many tasks and seeds the design needs, the power of the whole decision
  procedure simulated, and the default graph searched from that power.

Researchers import from `colabkit.analysis`, which re-exports the public names.
"""
