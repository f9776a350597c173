"""``python -m benchmarks [--quick] [--only S1,S3] [--json PATH]``: see ``docs/benchmarks.md``."""

from __future__ import annotations

import sys

from ._runner import main

sys.exit(main(sys.argv[1:]))
