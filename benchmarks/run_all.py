"""Run every benchmark of the product and print their figures (``make bench``).

Each area has its own benchmark module in this package with a ``main(argv)``;
this runs them one after another with their defaults. Benchmarks print
figures; they never decide pass or fail.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = (
    ("planner: plan() over 10,000 tracked issues", "benchmarks.planner"),
    ("emulator: requests per second, simple and at 10,000 issues", "benchmarks.emulator"),
    ("GitHub budget: polling 200 pull requests", "benchmarks.github_budget"),
    ("Linear budget: polling 1,000 issues", "benchmarks.linear_budget"),
    ("daemon: label to agent start, green + approval to merge", "benchmarks.reaction"),
    ("replicas: takeover time, polling cost of 2 against 1", "benchmarks.cluster"),
    ("store: the tick's reads over 10,000 tracked issues", "benchmarks.store"),
    ("scale: one daemon watching 1,000 and 10,000 issues", "benchmarks.scale"),
)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks named in ``argv`` (module names), or all of them."""
    wanted = set(argv if argv is not None else sys.argv[1:])
    for title, module_name in BENCHMARKS:
        if wanted and module_name not in wanted:
            continue
        print(f"== {title} ({module_name})", flush=True)
        module = importlib.import_module(module_name)
        module.main([])
        print(flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
