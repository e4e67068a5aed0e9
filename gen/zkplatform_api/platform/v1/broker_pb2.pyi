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

class TokenOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOKEN_ORIGIN_UNSPECIFIED: _ClassVar[TokenOrigin]
    TOKEN_ORIGIN_OPERATOR: _ClassVar[TokenOrigin]
    TOKEN_ORIGIN_MINTED: _ClassVar[TokenOrigin]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_OWNER: _ClassVar[Role]
    ROLE_ADMIN: _ClassVar[Role]
    ROLE_MEMBER: _ClassVar[Role]
    ROLE_SERVICE: _ClassVar[Role]
TOKEN_ORIGIN_UNSPECIFIED: TokenOrigin
TOKEN_ORIGIN_OPERATOR: TokenOrigin
TOKEN_ORIGIN_MINTED: TokenOrigin
ROLE_UNSPECIFIED: Role
ROLE_OWNER: Role
ROLE_ADMIN: Role
ROLE_MEMBER: Role
ROLE_SERVICE: Role

class Token(_message.Message):
    __slots__ = ("access_token", "token_id", "tenant_id", "principal_id", "scopes", "role", "pop_key_id", "issued_at", "expires_at")
    ACCESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    POP_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    ISSUED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    access_token: str
    token_id: str
    tenant_id: str
    principal_id: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    role: Role
    pop_key_id: str
    issued_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, access_token: _Optional[str] = ..., token_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., principal_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., role: _Optional[_Union[Role, str]] = ..., pop_key_id: _Optional[str] = ..., issued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MintUserApiTokenRequest(_message.Message):
    __slots__ = ("tenant_id", "requested_scopes", "requested_ttl_seconds", "pop_key_id", "request_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SCOPES_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    POP_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    requested_scopes: _containers.RepeatedScalarFieldContainer[str]
    requested_ttl_seconds: int
    pop_key_id: str
    request_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., requested_scopes: _Optional[_Iterable[str]] = ..., requested_ttl_seconds: _Optional[int] = ..., pop_key_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class MintUserApiTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: Token
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ...) -> None: ...

class TokenInfo(_message.Message):
    __slots__ = ("token_id", "tenant_id", "principal_id", "scopes", "role", "pop_key_id", "issued_at", "expires_at", "parent_token_id", "origin", "last_used_at")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    POP_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    ISSUED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    tenant_id: str
    principal_id: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    role: Role
    pop_key_id: str
    issued_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    parent_token_id: str
    origin: TokenOrigin
    last_used_at: _timestamp_pb2.Timestamp
    def __init__(self, token_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., principal_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., role: _Optional[_Union[Role, str]] = ..., pop_key_id: _Optional[str] = ..., issued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent_token_id: _Optional[str] = ..., origin: _Optional[_Union[TokenOrigin, str]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("principal_id", "page_size", "page_token")
    PRINCIPAL_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    principal_id: str
    page_size: int
    page_token: str
    def __init__(self, principal_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens", "next_page_token")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[TokenInfo]
    next_page_token: str
    def __init__(self, tokens: _Optional[_Iterable[_Union[TokenInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("token_id", "request_id")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    request_id: str
    def __init__(self, token_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("revoked_token_ids",)
    REVOKED_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    revoked_token_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, revoked_token_ids: _Optional[_Iterable[str]] = ...) -> None: ...
