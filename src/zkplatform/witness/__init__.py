"""A C2SP tlog-witness for the server's key logs (`zkplatform witness`), and the endpoints the
server's pusher reaches witnesses by.

- `core`: the add-checkpoint decision, over a `state`;
- `state`: the cosigned size and root of each log, in SQLite or in memory;
- `app`: the ASGI application serving it;
- `command`: `zkplatform witness keygen` and `serve`;
- `endpoints`: HttpWitness and InProcessWitness for domain/witnessing.py.
"""
