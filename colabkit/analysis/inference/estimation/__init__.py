"""The arithmetic of one estimate or test, kept apart from what the plan decides with it.

Each module answers "what is this number and its uncertainty?" for one mean or one contrast:
`stats` (means with their task-clustered SE, the study table), `mixed` (the model-based
estimate of a contrast, a random treatment slope by task) with `reml` (its REML optimum on the
variance boundary, in numpy), `signflip` (the exact studentized sign-flip test over tasks) and
`missing` (what the missing scores could change). The decisions and power built on them are in
`decisions` and `power_analysis`.
"""
