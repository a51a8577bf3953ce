"""The benchmarks of ``make bench``: figures about the daemon, measured from outside it.

Not part of the distribution (the wheel holds the ``orchestrator`` package
only) and never imported by it; run from the repository root, e.g.
``python -m benchmarks.run_all`` or ``python -m benchmarks.scale``.
"""
