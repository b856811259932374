"""Executor lifecycle: explaining ended executors, deciding what to do about them, and doing it."""
