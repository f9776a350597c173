"""``python -m pi_trio``: the ``pi-trio`` command line."""

import sys

from .cli import main

sys.exit(main())
