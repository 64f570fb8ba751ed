"""ldp-telemetry: telemetry under local differential privacy.

The work is done by three packages: ``client_sdk`` (on the device, standard library only), ``collector``
(the Flask service) and ``estimators`` (de-biasing with error bars).  This package holds the command line."""

__version__ = "0.1.0"
