"""The ldp-telemetry demo: a scenario of campaigns and simulated users (``scenario``) and the run (``run``)."""
