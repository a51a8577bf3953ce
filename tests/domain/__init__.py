"""Tests of the pure domain core."""
