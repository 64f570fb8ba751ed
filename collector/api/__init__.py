"""The collector's HTTP API, one blueprint per resource."""
