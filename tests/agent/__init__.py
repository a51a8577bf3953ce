"""Tests of the agent runner, the workspaces and the scripted agent."""
