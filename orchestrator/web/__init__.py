"""The operator's HTTP surface: dashboard, JSON API, metrics and health checks."""
