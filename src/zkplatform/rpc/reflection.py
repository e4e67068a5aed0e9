"""gRPC server reflection (v1 and v1alpha), so `buf curl` and grpcurl need no local schema.

connectrpc-grpcreflect describes files with connectrpc's protobuf runtime, so
the descriptors of our Google-generated code are loaded into it once here.
Reflection only reveals the public contract: it needs no token.
"""

from __future__ import annotations

from collections.abc import Iterable

from connectrpc_grpcreflect import (
    ServerReflectionAlphaASGIApplication,
    ServerReflectionAlphaService,
    ServerReflectionASGIApplication,
    ServerReflectionService,
)
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from protobuf import DescFile
from protobuf._codegen._file import file_desc  # the loader generated code uses

from zkplatform.rpc.edge import ASGIApp


def _desc_files(files: Iterable[FileDescriptor]) -> list[DescFile]:
    loaded: dict[str, DescFile] = {}

    def load(file: FileDescriptor) -> DescFile:
        if file.name not in loaded:
            dependencies = [load(dependency) for dependency in file.dependencies]
            proto = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(proto)
            loaded[file.name] = file_desc(proto.SerializeToString(), dependencies, {})
        return loaded[file.name]

    return [load(file) for file in files]


def reflection_routes(files: Iterable[FileDescriptor]) -> dict[str, ASGIApp]:
    """The reflection procedures, describing the services of these files."""
    descs = _desc_files(files)
    apps: list[ASGIApp] = [
        ServerReflectionASGIApplication(ServerReflectionService(*descs)),
        ServerReflectionAlphaASGIApplication(ServerReflectionAlphaService(*descs)),
    ]
    return {f"{app.path}/ServerReflectionInfo": app for app in apps}  # type: ignore[attr-defined]
