"""`python -m colabkit.seat PLAN.json`: the session host of a seat session (`colabkit.seat.host`)."""

import sys

from colabkit.seat.host import main

sys.exit(main(sys.argv[1:]))
