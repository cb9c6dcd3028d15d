"""The analysis plan, fixed before the data: what is claimed and how alpha is spent on it.

A reviewer can trust a decision only when its procedure was fixed in advance, so what the plan
fixes lives here, apart from the code that computes with it: `plan` (the plan and its hash),
`hypotheses` (the study's claims and their graph), `families` (the reported contrasts and
their multiple-comparison families), `graph` (the graphical procedure of Bretz et al. that
holds one study-wise error rate) and `plan_file` (the plan on disk, locked once a session
exists, amended in versions).
"""
