"""The study's decisions: every planned test through the plan's graph, and the tables of them.

`decide` runs every test the plan fixes, always all of them, at one study-wise error rate;
`contrasts` reports the contrasts between variants with those decisions beside the mixed model
and the sign-flip test; `termination` puts the session-end rules side by side and tests
whether a result depends on the rule. Kept together so every table shows the one adjusted p
and decision a planned test has.
"""
