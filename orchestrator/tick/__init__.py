"""One pass over a repository: read the world, plan, act."""
