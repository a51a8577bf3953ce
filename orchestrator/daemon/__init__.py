"""The daemon process: start-up, the scheduler's jobs, signals, status, shutdown; no tick logic."""
