"""A campaign kind that lives outside the project's packages: "bins" (randomized response over a number of bins, a
per-device cap kept in its own device state, its reports in its own table).  Each side is a module of this package,
registered the documented way (``LDP_TELEMETRY_KINDS`` for the servers and the Python device, ``registerKind`` for
the JavaScript SDK); docs/architecture.md ("Adding a campaign kind") walks through these files in order.

Nothing is imported here: the environment variable names the modules of each side."""
