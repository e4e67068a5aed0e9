"""gRPC server reflection (v1 and v1alpha), so `buf curl` and grpcurl need no local schema.

connectrpc-grpcreflect describes files with connectrpc's protobuf runtime, into
which our Google-generated descriptors are loaded once (rpc/encoding/descriptors.py).
Reflection only reveals the public contract: it needs no token.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from connectrpc.interceptor import Interceptor
from connectrpc_grpcreflect import (
    ServerReflectionAlphaASGIApplication,
    ServerReflectionAlphaService,
    ServerReflectionASGIApplication,
    ServerReflectionService,
)
from google.protobuf.descriptor import FileDescriptor
from protobuf import DescFile

from zkplatform.asgi import ASGIApp
from zkplatform.rpc.encoding.descriptors import load


def reflection_routes(
    files: Iterable[FileDescriptor], *, read_max_bytes: int, interceptors: Sequence[Interceptor]
) -> dict[str, ASGIApp]:
    """The reflection procedures, describing the services of these files."""
    descs = _loaded(tuple(files))
    mapping = list(interceptors)
    apps: list[ASGIApp] = [
        ServerReflectionASGIApplication(
            ServerReflectionService(*descs), interceptors=mapping, read_max_bytes=read_max_bytes
        ),
        ServerReflectionAlphaASGIApplication(
            ServerReflectionAlphaService(*descs), interceptors=mapping, read_max_bytes=read_max_bytes
        ),
    ]
    return {f"{app.path}/ServerReflectionInfo": app for app in apps}  # type: ignore[attr-defined]


@functools.cache
def _loaded(files: tuple[FileDescriptor, ...]) -> tuple[DescFile, ...]:
    """Once a process: the descriptors never change, and loading them was most of what building
    an app cost (a test builds hundreds)."""
    loaded: dict[str, DescFile] = {}
    return tuple(load(file, loaded=loaded) for file in files)
