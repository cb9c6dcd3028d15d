"""Where sessions and notebooks run, and how many at once: processes, Dask, the machine's caps."""
