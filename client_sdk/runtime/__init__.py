"""The device runtime: what only a device runs, on top of the shared core (the rest of ``client_sdk``).

``Client`` (client.py) is a facade over the spec cache (spec_cache.py: fetched or shipped specs, aggregators), the
recorder (recorder.py: policy, ledger, perturbation, queue), and the uploader (uploader.py: batches over HTTP with
backoff).  Beneath them: the state file (state_file.py, queue.py, ledger.py, held.py, device_state.py), the HTTP
transport (transport.py), statuses (status.py, answers.py) and specs shipped with the app (shipped.py).

Nothing outside the device imports this package: the collector, the estimators and the CLI use the core only
(tests/test_layers.py).
"""
