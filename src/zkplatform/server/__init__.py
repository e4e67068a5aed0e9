"""What serves the application: `zkplatform serve` once its settings are read, and the glue to
hypercorn.

- serve.py: the start-up checks, the port, one worker or several, hypercorn's configuration;
- workers.py: the worker processes, each on a listening socket of its own;
- listener.py: TLS or not, and the grace period of a stop;
- startup.py: the store, the log keys and the witnesses, checked before the port is taken;
- metrics_port.py: the Prometheus port, and revoking a token seen in one of its URLs;
- log_setup.py: one logging format for every process;
- hypercorn_fix.py: fixes of hypercorn 0.18's HTTP/2, HTTP/1.1 and shutdown code;
- tls_port.py: a TLS port that answers a plaintext request instead of hanging up;
- private_names.py: every private name of hypercorn, connectrpc and protobuf-py our code
  touches, with the upstream issue each waits on: the checklist of an upgrade.
"""
