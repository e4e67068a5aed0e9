"""New TLS connections, with and without the TLS port's first-byte look (src/zkplatform/server/tls_port.py).

Two servers side by side on 127.0.0.1, one with hypercorn's own TLS accept and one with the
TLS port's, each given the same rounds of new connections in turn: a handshake, GET /healthz,
and the close. Prints microseconds per connection for each and their ratio, round by round.
Calls on a connection already open take no other path, so this is all the look costs.

    .venv/bin/python -m bench.tls_accept [connections per round, default 400] [rounds, default 6]
"""

from __future__ import annotations

import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.e2e.test_tls import make_pki

SERVE = """
import sys
from zkplatform import cli
from zkplatform.server import tls_port
if sys.argv[1] == "hypercorn":
    tls_port.apply = lambda: None
sys.exit(cli.main(["serve", *sys.argv[2:]]))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _connection(port: int, context: ssl.SSLContext) -> None:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        while tls.recv(4096):
            pass


def _per_connection_us(port: int, context: ssl.SSLContext, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        _connection(port, context)
    return (time.perf_counter() - start) / count * 1e6


def _ready(port: int, context: ssl.SSLContext) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            _connection(port, context)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # a benchmark's start-up poll, not a test
        else:
            return


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        context = ssl.create_default_context(cafile=pki.ca)
        ports = {"hypercorn": _free_port(), "tls_port": _free_port()}
        servers = [
            subprocess.Popen(  # this interpreter, our own module
                [
                    sys.executable,
                    "-c",
                    SERVE,
                    kind,
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--store",
                    "memory:",
                    "--certfile",
                    str(pki.cert),
                    "--keyfile",
                    str(pki.key),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=os.environ,
            )
            for kind, port in ports.items()
        ]
        try:
            for port in ports.values():
                _ready(port, context)
                _per_connection_us(port, context, 50)  # warm up
            ratios = []
            for number in range(1, rounds + 1):
                before = _per_connection_us(ports["hypercorn"], context, count)
                after = _per_connection_us(ports["tls_port"], context, count)
                ratios.append(after / before)
                print(f"round {number}: hypercorn {before:.0f} us, tls_port {after:.0f} us, ratio {after / before:.3f}")
            print(f"median ratio {statistics.median(ratios):.3f} over {rounds} rounds of {count} connections")
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
