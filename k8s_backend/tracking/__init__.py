"""Executors as explicit state machines: states, transitions, histories and stuck-pod reasons."""
