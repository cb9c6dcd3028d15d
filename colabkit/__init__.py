"""colabkit: a Jupyter-first research suite for studying human-AI collaboration in a shared workspace."""

__version__ = "0.1.0"
