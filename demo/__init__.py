"""The ldp-telemetry demo: a scenario of campaigns and simulated users (``scenario``) and the run (``run``) over its
steps (``servers``, ``devices``, ``distributed``, ``reports``, ``summary``); docs/architecture.md, "Inside the demo"."""
