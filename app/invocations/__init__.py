"""Invocations: the Runner that executes an app for one user message and persists its events."""
