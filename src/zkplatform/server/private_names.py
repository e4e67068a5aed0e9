"""Every name of hypercorn, connectrpc and protobuf-py that is not their public API and that our
code touches: the one list to go through on an upgrade (docs/development.md, "Upgrading
hypercorn or connectrpc"). tests/unit/test_private_names.py fails when one is gone from the
installed version, or when a version differs from the one the list was checked against.

hypercorn's names are patched or called by server/hypercorn_fix.py (which applies nothing on
another version) and server/tls_port.py; connectrpc's and protobuf-py's are imported by
rpc/internals.py, the only module that imports a private name (ruff PLC2701). `upstream` is the
issue or pull request whose release would let the entry go, or says that none is filed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# The versions the list was checked against (constraints.txt pins them).
CHECKED_VERSIONS: Final = {"hypercorn": "0.18.0", "connectrpc": "0.13.0", "protobuf-py": "0.7.0"}

_H2_KEYERROR: Final = "hypercorn issue 329; fixed by PRs 312, 334 (open) and 365 (closed unmerged)"
_NO_ISSUE: Final = "no upstream issue filed"


@dataclass(frozen=True, slots=True)
class PrivateName:
    module: str  # where it lives
    name: str  # a dotted path from the module: a class's method, or an attribute its instances set
    use: str  # replaced, called, read, or constructed
    by: str  # our module that touches it
    upstream: str


_FIX = "server/hypercorn_fix.py"
_INTERNALS = "rpc/internals.py"

PRIVATE_NAMES: Final = (
    # Data for a closed HTTP/2 stream kills the connection with a KeyError.
    PrivateName("hypercorn.protocol.h2", "H2Protocol._handle_events", "replaced", _FIX, _H2_KEYERROR),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.streams", "read", _FIX, _H2_KEYERROR),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.connection", "called", _FIX, _H2_KEYERROR),
    # A cleartext HTTP/2 connection with prior knowledge never becomes idle.
    PrivateName("hypercorn.protocol.h2", "H2Protocol.initiate", "replaced", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.send", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.events", "Updated", "constructed", _FIX, _NO_ISSUE),
    # A stalled reader's empty take releases its writer: unbounded response buffers.
    PrivateName(
        "hypercorn.protocol.h2",
        "StreamBuffer.pop",
        "replaced",
        _FIX,
        "no hypercorn issue filed; the same fix is davidbrochart/anycorn PR 61 (a fork)",
    ),
    PrivateName("hypercorn.protocol.h2", "StreamBuffer.buffer", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "StreamBuffer._paused", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "StreamBuffer._is_empty", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "BUFFER_LOW_WATER", "read", _FIX, _NO_ISSUE),
    # Streams that end unfinished: their writers released, the stream reset, HTTP/1.1 closed.
    PrivateName("hypercorn.protocol.h2", "H2Protocol._close_stream", "replaced", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.stream_buffers", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.closed", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.priority", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol.has_data", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "H2Protocol._flush", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "StreamBuffer._complete", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h2", "StreamBuffer.close", "called", _FIX, _NO_ISSUE),
    PrivateName(
        "hypercorn.protocol.h11",
        "H11Protocol._maybe_recycle",
        "replaced",
        _FIX,
        "no upstream issue filed (hypercorn issue 314 is a neighbour: cleanup after an early answer)",
    ),
    PrivateName("hypercorn.protocol.h11", "H11Protocol.connection", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol.h11", "H11Protocol.send", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.events", "Closed", "constructed", _FIX, _NO_ISSUE),
    # An idle connection closed at shutdown under a request (Python 3.11's wait_for).
    PrivateName("hypercorn.asyncio.tcp_server", "TCPServer._idle_timeout", "replaced", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.tcp_server", "TCPServer._initiate_server_close", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.tcp_server", "TCPServer.context", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.tcp_server", "TCPServer.protocol", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.tcp_server", "TCPServer.config", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.protocol", "ProtocolWrapper.handle", "replaced", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.events", "RawData", "read", _FIX, _NO_ISSUE),
    # A full request queue after the application ended stops the connection.
    PrivateName("hypercorn.asyncio.task_group", "TaskGroup.spawn_app", "replaced", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.task_group", "TaskGroup.spawn", "called", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.task_group", "TaskGroup._loop", "read", _FIX, _NO_ISSUE),
    PrivateName("hypercorn.asyncio.task_group", "_handle", "called", _FIX, _NO_ISSUE),
    # The TLS port answers a plaintext request: the run module's global `asyncio` is swapped
    # for one whose start_server serves TLS sockets with server/tls_port.TlsListener.
    PrivateName(
        "hypercorn.asyncio.run",
        "asyncio",
        "replaced",
        "server/tls_port.py",
        "no upstream issue filed (hypercorn has no hook for how it accepts a TLS connection)",
    ),
    # Streams ended at shutdown in their own protocol; refusals before connectrpc.
    PrivateName(
        "connectrpc._protocol",
        "ConnectWireError",
        "called",
        _INTERNALS,
        "no upstream issue filed (connectrpc 0.13 has no public writer of a wire error)",
    ),
    PrivateName("connectrpc._protocol_grpc", "GRPCServerProtocol", "called", _INTERNALS, _NO_ISSUE),
    PrivateName("connectrpc._protocol_server", "negotiate_server_protocol", "called", _INTERNALS, _NO_ISSUE),
    # Our Google-generated descriptors loaded into protobuf-py (error details, reflection).
    PrivateName("protobuf._codegen._file", "file_desc", "called", _INTERNALS, _NO_ISSUE),
)
