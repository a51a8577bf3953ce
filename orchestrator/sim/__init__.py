"""A local GitHub emulator: REST, GraphQL and git smart HTTP over bare repositories.

It plays GitHub for the product's tests, its demo and its benchmarks, billing
requests and injecting faults the way the real service would.
"""
