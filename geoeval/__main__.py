import sys

from geoeval.cli import main

sys.exit(main())
