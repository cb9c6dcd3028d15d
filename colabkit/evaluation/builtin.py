"""The scorers shipped with colabkit: importing a module registers its scorers by name.

Add a line here for each module of scorers (the registry imports this module lazily, so
`colabkit score --metrics` knows every metric without importing judges at start-up).
"""

from colabkit.evaluation import hypothesis  # noqa: F401  (performance, hms)
