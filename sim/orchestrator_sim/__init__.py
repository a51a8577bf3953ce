"""A local GitHub emulator: REST, GraphQL and git smart HTTP over bare repositories.

It plays GitHub (and Linear, in `orchestrator_sim.linear`) for the product's
tests, its demo and its benchmarks, billing requests and injecting faults the
way the real service would. It is its own distribution, `orchestrator-sim`
(sim/pyproject.toml): the daemon never imports it and its wheel leaves it out.
"""
