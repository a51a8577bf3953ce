"""The daemon: scheduler, tick, side-effect gate, worker pool and lifecycle."""
