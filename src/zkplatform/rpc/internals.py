"""The private parts of our runtimes that we cannot do without, gathered in one place.

Pinned: connectrpc 0.13.0 and protobuf-py 0.7.0 (its protobuf runtime). On an
upgrade, this module is the one to check; nothing else may import a private
name (ruff PLC2701 and the import contracts in pyproject.toml enforce it).

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
