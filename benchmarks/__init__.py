"""Benchmarks for pi_trio, side by side with a bare-Trio floor and pi 0.73.1 on Node.

``python -m benchmarks`` runs the scenarios S1-S7 of ``BENCHMARKS.md`` (see
``docs/benchmarks.md``); each implementation runs each scenario in a fresh process.
"""
