"""`python -m colabkit` runs the command line, for environments without the console script."""

from colabkit.cli import main

raise SystemExit(main())
