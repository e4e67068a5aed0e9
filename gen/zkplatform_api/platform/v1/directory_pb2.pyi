import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from zkplatform_api.platform.v1 import strings_pb2 as _strings_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Checkpoint(_message.Message):
    __slots__ = ("note",)
    NOTE_FIELD_NUMBER: _ClassVar[int]
    note: str
    def __init__(self, note: _Optional[str] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("device_id", "tenant_id", "principal_id", "signing_jwk", "agreement_key_id", "agreement_jwk", "endorser_device_id", "created_at", "log_index", "revoked_at")
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNING_JWK_FIELD_NUMBER: _ClassVar[int]
    AGREEMENT_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    AGREEMENT_JWK_FIELD_NUMBER: _ClassVar[int]
    ENDORSER_DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    device_id: str
    tenant_id: str
    principal_id: str
    signing_jwk: str
    agreement_key_id: str
    agreement_jwk: str
    endorser_device_id: str
    created_at: _timestamp_pb2.Timestamp
    log_index: int
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, device_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., principal_id: _Optional[str] = ..., signing_jwk: _Optional[str] = ..., agreement_key_id: _Optional[str] = ..., agreement_jwk: _Optional[str] = ..., endorser_device_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., log_index: _Optional[int] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class KeyLogEntry(_message.Message):
    __slots__ = ("index", "data")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    index: int
    data: str
    def __init__(self, index: _Optional[int] = ..., data: _Optional[str] = ...) -> None: ...

class PublishDeviceRequest(_message.Message):
    __slots__ = ("statement", "signature", "endorsement")
    STATEMENT_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    ENDORSEMENT_FIELD_NUMBER: _ClassVar[int]
    statement: str
    signature: str
    endorsement: str
    def __init__(self, statement: _Optional[str] = ..., signature: _Optional[str] = ..., endorsement: _Optional[str] = ...) -> None: ...

class PublishDeviceResponse(_message.Message):
    __slots__ = ("device", "entry", "checkpoint")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    device: Device
    entry: KeyLogEntry
    checkpoint: Checkpoint
    def __init__(self, device: _Optional[_Union[Device, _Mapping]] = ..., entry: _Optional[_Union[KeyLogEntry, _Mapping]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class RevokeDeviceRequest(_message.Message):
    __slots__ = ("statement", "signature")
    STATEMENT_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    statement: str
    signature: str
    def __init__(self, statement: _Optional[str] = ..., signature: _Optional[str] = ...) -> None: ...

class RevokeDeviceResponse(_message.Message):
    __slots__ = ("device", "entry", "checkpoint")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    device: Device
    entry: KeyLogEntry
    checkpoint: Checkpoint
    def __init__(self, device: _Optional[_Union[Device, _Mapping]] = ..., entry: _Optional[_Union[KeyLogEntry, _Mapping]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class ResetPrincipalRequest(_message.Message):
    __slots__ = ("principal_id", "request_id")
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    principal_id: str
    request_id: str
    def __init__(self, principal_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ResetPrincipalResponse(_message.Message):
    __slots__ = ("entry", "checkpoint")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    entry: KeyLogEntry
    checkpoint: Checkpoint
    def __init__(self, entry: _Optional[_Union[KeyLogEntry, _Mapping]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class GetRecipientKeysRequest(_message.Message):
    __slots__ = ("principal_ids", "page_size", "page_token")
    PRINCIPAL_IDS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    principal_ids: _containers.RepeatedScalarFieldContainer[str]
    page_size: int
    page_token: str
    def __init__(self, principal_ids: _Optional[_Iterable[str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetRecipientKeysResponse(_message.Message):
    __slots__ = ("devices", "checkpoint", "next_page_token")
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    checkpoint: Checkpoint
    next_page_token: str
    def __init__(self, devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListKeyLogRequest(_message.Message):
    __slots__ = ("start_index", "page_size", "page_token")
    START_INDEX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    start_index: int
    page_size: int
    page_token: str
    def __init__(self, start_index: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListKeyLogResponse(_message.Message):
    __slots__ = ("entries", "checkpoint", "consistency_proof", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CONSISTENCY_PROOF_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[KeyLogEntry]
    checkpoint: Checkpoint
    consistency_proof: _containers.RepeatedScalarFieldContainer[bytes]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[KeyLogEntry, _Mapping]]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., consistency_proof: _Optional[_Iterable[bytes]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
