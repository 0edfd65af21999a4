"""`python -m geoeval`: a run goes to this Python's warm server when one runs (`geoeval.cli.warm`:
it starts with everything imported), else runs here; either way the process ends as
`geoeval.cli.exit.exit_now` ends it."""

import sys

from geoeval.cli.warm import run_warm

served = run_warm(sys.argv)
if served is not None:
    sys.exit(served)

# the run's own imports (Inspect, MLflow, Hydra: seconds), only once no warm server took the run
from geoeval.cli.exit import exit_now  # noqa: E402
from geoeval.cli.main import main  # noqa: E402

exit_now(int(main() or 0))
