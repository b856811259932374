"""Observing executor pods: pod states, immutable snapshots, the snapshot store, watch and polling sources."""
