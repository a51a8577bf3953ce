"""Test support: servers and helpers shared by the test packages."""
