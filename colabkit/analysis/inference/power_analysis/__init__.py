"""Power, answered before the data: how big the study must be, and which graph declares most.

`power` gives the tasks and seeds a paired contrast needs (the noncentral t on task means);
`simulate` the power of the rule actually used, the whole decision procedure on simulated
grids; `graph_search` the default graph chosen from that simulated power, once, and written
into the default plan. They use the plan and the decision rules and decide nothing themselves.
"""
