"""Agent turns on any replica: claims, the worker pool, the turn runner, the prompt, the push."""
