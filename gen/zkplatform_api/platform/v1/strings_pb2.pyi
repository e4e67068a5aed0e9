from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
NO_NUL_FIELD_NUMBER: _ClassVar[int]
no_nul: _descriptor.FieldDescriptor
