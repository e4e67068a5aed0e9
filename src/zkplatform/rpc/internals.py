"""The private parts of our runtimes that we cannot do without, gathered in one place.

Pinned: connectrpc 0.13.0 and protobuf-py 0.7.0 (its protobuf runtime). On an
upgrade, this module is the one to check; nothing else may import a private
name (ruff PLC2701 and the import contracts in pyproject.toml enforce it).

- The edge answers some calls before connectrpc sees them (a body over the
  limit, a missing protocol header, a token in the URL) and must answer them in
  the request's own protocol: connectrpc's wire error and its protocol
  negotiation are what render a Connect, gRPC or gRPC-Web error exactly as
  connectrpc itself would. connectrpc 0.13 exposes no public API for that.
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
