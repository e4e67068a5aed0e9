import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from zkplatform_api.platform.v1 import strings_pb2 as _strings_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Item(_message.Message):
    __slots__ = ("item_id", "tenant_id", "vault_id", "version", "kind", "title_hash", "updated_at", "encrypted_payload", "wrapped_keys", "deleted", "purge_time")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TITLE_HASH_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    WRAPPED_KEYS_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    PURGE_TIME_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    tenant_id: str
    vault_id: str
    version: int
    kind: str
    title_hash: str
    updated_at: _timestamp_pb2.Timestamp
    encrypted_payload: EncryptedPayload
    wrapped_keys: _containers.RepeatedCompositeFieldContainer[WrappedKey]
    deleted: bool
    purge_time: _timestamp_pb2.Timestamp
    def __init__(self, item_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., vault_id: _Optional[str] = ..., version: _Optional[int] = ..., kind: _Optional[str] = ..., title_hash: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., encrypted_payload: _Optional[_Union[EncryptedPayload, _Mapping]] = ..., wrapped_keys: _Optional[_Iterable[_Union[WrappedKey, _Mapping]]] = ..., deleted: _Optional[bool] = ..., purge_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class EncryptedPayload(_message.Message):
    __slots__ = ("alg", "nonce", "aad", "ciphertext", "version", "commitment", "signer", "signature")
    ALG_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    AAD_FIELD_NUMBER: _ClassVar[int]
    CIPHERTEXT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SIGNER_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    alg: str
    nonce: str
    aad: str
    ciphertext: str
    version: int
    commitment: str
    signer: str
    signature: str
    def __init__(self, alg: _Optional[str] = ..., nonce: _Optional[str] = ..., aad: _Optional[str] = ..., ciphertext: _Optional[str] = ..., version: _Optional[int] = ..., commitment: _Optional[str] = ..., signer: _Optional[str] = ..., signature: _Optional[str] = ...) -> None: ...

class WrappedKey(_message.Message):
    __slots__ = ("recipient_id", "wrap_alg", "wrapped_key")
    RECIPIENT_ID_FIELD_NUMBER: _ClassVar[int]
    WRAP_ALG_FIELD_NUMBER: _ClassVar[int]
    WRAPPED_KEY_FIELD_NUMBER: _ClassVar[int]
    recipient_id: str
    wrap_alg: str
    wrapped_key: str
    def __init__(self, recipient_id: _Optional[str] = ..., wrap_alg: _Optional[str] = ..., wrapped_key: _Optional[str] = ...) -> None: ...

class Cursor(_message.Message):
    __slots__ = ("vault_id", "sequence", "epoch")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    sequence: int
    epoch: str
    def __init__(self, vault_id: _Optional[str] = ..., sequence: _Optional[int] = ..., epoch: _Optional[str] = ...) -> None: ...

class DeleteItemRequest(_message.Message):
    __slots__ = ("vault_id", "item_id", "base_version", "request_id")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    BASE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    item_id: str
    base_version: int
    request_id: str
    def __init__(self, vault_id: _Optional[str] = ..., item_id: _Optional[str] = ..., base_version: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class DeleteItemResponse(_message.Message):
    __slots__ = ("item", "cursor")
    ITEM_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    item: Item
    cursor: Cursor
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ...) -> None: ...

class CreateItemRequest(_message.Message):
    __slots__ = ("vault_id", "item_id", "kind", "title_hash", "encrypted_payload", "wrapped_keys", "request_id")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TITLE_HASH_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    WRAPPED_KEYS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    item_id: str
    kind: str
    title_hash: str
    encrypted_payload: EncryptedPayload
    wrapped_keys: _containers.RepeatedCompositeFieldContainer[WrappedKey]
    request_id: str
    def __init__(self, vault_id: _Optional[str] = ..., item_id: _Optional[str] = ..., kind: _Optional[str] = ..., title_hash: _Optional[str] = ..., encrypted_payload: _Optional[_Union[EncryptedPayload, _Mapping]] = ..., wrapped_keys: _Optional[_Iterable[_Union[WrappedKey, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateItemResponse(_message.Message):
    __slots__ = ("item", "cursor")
    ITEM_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    item: Item
    cursor: Cursor
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ...) -> None: ...

class UpdateItemRequest(_message.Message):
    __slots__ = ("vault_id", "item_id", "kind", "title_hash", "encrypted_payload", "wrapped_keys", "base_version", "update_mask", "request_id")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TITLE_HASH_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    WRAPPED_KEYS_FIELD_NUMBER: _ClassVar[int]
    BASE_VERSION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    item_id: str
    kind: str
    title_hash: str
    encrypted_payload: EncryptedPayload
    wrapped_keys: _containers.RepeatedCompositeFieldContainer[WrappedKey]
    base_version: int
    update_mask: _field_mask_pb2.FieldMask
    request_id: str
    def __init__(self, vault_id: _Optional[str] = ..., item_id: _Optional[str] = ..., kind: _Optional[str] = ..., title_hash: _Optional[str] = ..., encrypted_payload: _Optional[_Union[EncryptedPayload, _Mapping]] = ..., wrapped_keys: _Optional[_Iterable[_Union[WrappedKey, _Mapping]]] = ..., base_version: _Optional[int] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class UpdateItemResponse(_message.Message):
    __slots__ = ("item", "cursor")
    ITEM_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    item: Item
    cursor: Cursor
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ...) -> None: ...

class GetItemRequest(_message.Message):
    __slots__ = ("vault_id", "item_id")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    item_id: str
    def __init__(self, vault_id: _Optional[str] = ..., item_id: _Optional[str] = ...) -> None: ...

class GetItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class ListItemsRequest(_message.Message):
    __slots__ = ("vault_id", "page_size", "page_token", "show_deleted")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SHOW_DELETED_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    page_size: int
    page_token: str
    show_deleted: bool
    def __init__(self, vault_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., show_deleted: _Optional[bool] = ...) -> None: ...

class ListItemsResponse(_message.Message):
    __slots__ = ("items", "next_page_token", "cursor")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Item]
    next_page_token: str
    cursor: Cursor
    def __init__(self, items: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ...) -> None: ...

class ItemChange(_message.Message):
    __slots__ = ("item", "sequence")
    ITEM_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    item: Item
    sequence: int
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListChangesRequest(_message.Message):
    __slots__ = ("vault_id", "since_sequence", "page_size", "since_epoch")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    since_sequence: int
    page_size: int
    since_epoch: str
    def __init__(self, vault_id: _Optional[str] = ..., since_sequence: _Optional[int] = ..., page_size: _Optional[int] = ..., since_epoch: _Optional[str] = ...) -> None: ...

class ListChangesResponse(_message.Message):
    __slots__ = ("changes", "cursor", "has_more")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[ItemChange]
    cursor: Cursor
    has_more: bool
    def __init__(self, changes: _Optional[_Iterable[_Union[ItemChange, _Mapping]]] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ..., has_more: _Optional[bool] = ...) -> None: ...

class WatchChangesRequest(_message.Message):
    __slots__ = ("vault_id", "since_sequence", "since_epoch")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    since_sequence: int
    since_epoch: str
    def __init__(self, vault_id: _Optional[str] = ..., since_sequence: _Optional[int] = ..., since_epoch: _Optional[str] = ...) -> None: ...

class WatchChangesResponse(_message.Message):
    __slots__ = ("changes", "cursor", "caught_up")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[ItemChange]
    cursor: Cursor
    caught_up: bool
    def __init__(self, changes: _Optional[_Iterable[_Union[ItemChange, _Mapping]]] = ..., cursor: _Optional[_Union[Cursor, _Mapping]] = ..., caught_up: _Optional[bool] = ...) -> None: ...

class Vault(_message.Message):
    __slots__ = ("vault_id", "tenant_id", "members")
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    tenant_id: str
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, vault_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class ListVaultsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVaultsResponse(_message.Message):
    __slots__ = ("vaults", "next_page_token")
    VAULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    vaults: _containers.RepeatedCompositeFieldContainer[Vault]
    next_page_token: str
    def __init__(self, vaults: _Optional[_Iterable[_Union[Vault, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetVaultRequest(_message.Message):
    __slots__ = ("vault_id",)
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    vault_id: str
    def __init__(self, vault_id: _Optional[str] = ...) -> None: ...

class GetVaultResponse(_message.Message):
    __slots__ = ("vault",)
    VAULT_FIELD_NUMBER: _ClassVar[int]
    vault: Vault
    def __init__(self, vault: _Optional[_Union[Vault, _Mapping]] = ...) -> None: ...
