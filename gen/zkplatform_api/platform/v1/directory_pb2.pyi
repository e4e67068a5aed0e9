import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from zkplatform_api.platform.v1 import strings_pb2 as _strings_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class KeyLogAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    KEY_LOG_ACTION_UNSPECIFIED: _ClassVar[KeyLogAction]
    KEY_LOG_ACTION_PUBLISHED: _ClassVar[KeyLogAction]
    KEY_LOG_ACTION_REVOKED: _ClassVar[KeyLogAction]
KEY_LOG_ACTION_UNSPECIFIED: KeyLogAction
KEY_LOG_ACTION_PUBLISHED: KeyLogAction
KEY_LOG_ACTION_REVOKED: KeyLogAction

class RecipientKey(_message.Message):
    __slots__ = ("key_id", "tenant_id", "principal_id", "jwk", "created_at", "revoked_at")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    JWK_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    tenant_id: str
    principal_id: str
    jwk: str
    created_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, key_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., principal_id: _Optional[str] = ..., jwk: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class KeyLogHead(_message.Message):
    __slots__ = ("size", "hash")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    size: int
    hash: str
    def __init__(self, size: _Optional[int] = ..., hash: _Optional[str] = ...) -> None: ...

class KeyLogEntry(_message.Message):
    __slots__ = ("index", "action", "tenant_id", "principal_id", "key_id", "jwk", "time", "hash")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    JWK_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    index: int
    action: KeyLogAction
    tenant_id: str
    principal_id: str
    key_id: str
    jwk: str
    time: _timestamp_pb2.Timestamp
    hash: str
    def __init__(self, index: _Optional[int] = ..., action: _Optional[_Union[KeyLogAction, str]] = ..., tenant_id: _Optional[str] = ..., principal_id: _Optional[str] = ..., key_id: _Optional[str] = ..., jwk: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., hash: _Optional[str] = ...) -> None: ...

class PublishKeyRequest(_message.Message):
    __slots__ = ("public_key_jwk", "request_id")
    PUBLIC_KEY_JWK_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    public_key_jwk: str
    request_id: str
    def __init__(self, public_key_jwk: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class PublishKeyResponse(_message.Message):
    __slots__ = ("key", "log_head")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LOG_HEAD_FIELD_NUMBER: _ClassVar[int]
    key: RecipientKey
    log_head: KeyLogHead
    def __init__(self, key: _Optional[_Union[RecipientKey, _Mapping]] = ..., log_head: _Optional[_Union[KeyLogHead, _Mapping]] = ...) -> None: ...

class RevokeKeyRequest(_message.Message):
    __slots__ = ("key_id",)
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    def __init__(self, key_id: _Optional[str] = ...) -> None: ...

class RevokeKeyResponse(_message.Message):
    __slots__ = ("key", "log_head")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LOG_HEAD_FIELD_NUMBER: _ClassVar[int]
    key: RecipientKey
    log_head: KeyLogHead
    def __init__(self, key: _Optional[_Union[RecipientKey, _Mapping]] = ..., log_head: _Optional[_Union[KeyLogHead, _Mapping]] = ...) -> None: ...

class GetRecipientKeysRequest(_message.Message):
    __slots__ = ("principal_ids",)
    PRINCIPAL_IDS_FIELD_NUMBER: _ClassVar[int]
    principal_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, principal_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRecipientKeysResponse(_message.Message):
    __slots__ = ("keys", "log_head")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    LOG_HEAD_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[RecipientKey]
    log_head: KeyLogHead
    def __init__(self, keys: _Optional[_Iterable[_Union[RecipientKey, _Mapping]]] = ..., log_head: _Optional[_Union[KeyLogHead, _Mapping]] = ...) -> None: ...

class ListKeyLogRequest(_message.Message):
    __slots__ = ("since_index", "page_size", "page_token")
    SINCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    since_index: int
    page_size: int
    page_token: str
    def __init__(self, since_index: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListKeyLogResponse(_message.Message):
    __slots__ = ("entries", "log_head", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    LOG_HEAD_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[KeyLogEntry]
    log_head: KeyLogHead
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[KeyLogEntry, _Mapping]]] = ..., log_head: _Optional[_Union[KeyLogHead, _Mapping]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
