"""The private parts of our runtimes that we cannot do without, gathered in one place.

Pinned: connectrpc 0.13.0 and protobuf-py 0.7.0 (its protobuf runtime). Nothing
else may import a private name (ruff PLC2701 enforces it). The server's glue
also patches private parts of hypercorn (server/hypercorn_fix.py,
server/tls_port.py); every private name either touches, with the upstream issue
it waits on, is listed in server/private_names.py: the checklist of an upgrade.

- At shutdown, the open streams are ended with `unavailable` in their own
  protocol (rpc/front/streams.py): connectrpc's wire error, its protocol
  negotiation and its end-of-stream writer are what write that end exactly as
  connectrpc itself would. connectrpc 0.13 exposes no public API for that. The
  front's few refusals before connectrpc (rpc/front/answers.py) use the same.
- connectrpc renders error details and serves reflection through protobuf-py,
  into which our Google-generated descriptors must be loaded; `file_desc` is
  the loader protobuf-py's own generated code calls.
"""

from __future__ import annotations

from connectrpc._protocol import ConnectWireError
from connectrpc._protocol_grpc import GRPCServerProtocol
from connectrpc._protocol_server import negotiate_server_protocol
from protobuf._codegen._file import file_desc

__all__ = ["ConnectWireError", "GRPCServerProtocol", "file_desc", "negotiate_server_protocol"]
