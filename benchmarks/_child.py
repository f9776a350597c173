"""One implementation running one scenario once: ``python -m benchmarks._child IMPL PARAMS``.

``PARAMS`` is the scenario's parameters as JSON; the result is printed as one JSON line:
``{"figures": {...}, "checks": {...}, "info": {...}}``.
"""

from __future__ import annotations

import importlib
import json
import sys

MODULES = {"pi_trio": "benchmarks.impl_pi_trio", "floor": "benchmarks.impl_floor"}


def main(argv: list[str]) -> int:
    impl, params = argv[0], json.loads(argv[1])
    module = importlib.import_module(MODULES[impl])
    result = module.run_scenario(params)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
