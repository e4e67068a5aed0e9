"""Domain models: plain frozen values, no protobuf."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from zkplatform.domain.errors import DomainError


class Scope(StrEnum):
    VAULT_ITEMS_READ = "vault.items.read"
    VAULT_ITEMS_WRITE = "vault.items.write"
    VAULT_ITEMS_DELETE = "vault.items.delete"
    BROKER_TOKENS_MINT = "broker.tokens.mint"
    BROKER_TOKENS_MANAGE = "broker.tokens.manage"  # list and revoke tokens beyond one's own chain
    DIRECTORY_KEYS_READ = "directory.keys.read"  # the tenant's recipient keys and their log
    DIRECTORY_KEYS_PUBLISH = "directory.keys.publish"  # publish and revoke one's own recipient keys


VAULT_SCOPES = frozenset({Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_DELETE})
# Every role may hold both: whoever shares items needs its recipients' keys, and publishes its own.
DIRECTORY_SCOPES = frozenset({Scope.DIRECTORY_KEYS_READ, Scope.DIRECTORY_KEYS_PUBLISH})
ALL_SCOPES = frozenset(Scope)
# A member manages its own tokens only (what the scope allows it is decided where tokens are listed).
MEMBER_SCOPES = VAULT_SCOPES | {Scope.BROKER_TOKENS_MANAGE} | DIRECTORY_SCOPES


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    SERVICE = "service"

    @property
    def scope_bound(self) -> frozenset[Scope]:
        """The most a principal of this role may hold. A service holds only what
        the operator grants it, so its bound is everything and its grant decides."""
        return MEMBER_SCOPES if self is Role.MEMBER else ALL_SCOPES

    @property
    def default_scopes(self) -> frozenset[Scope]:
        """What a principal of this role is granted when the operator says nothing."""
        return frozenset() if self is Role.SERVICE else self.scope_bound

    def grant(self, scopes: Iterable[Scope] | None = None) -> frozenset[Scope]:
        """The scopes a new principal of this role is given: `scopes`, or by default the
        role's default; ScopesBeyondRole when they exceed the role's bound."""
        granted = self.default_scopes if scopes is None else frozenset(scopes)
        if beyond := granted - self.scope_bound:
            raise ScopesBeyondRole(self, beyond)
        return granted


class ScopesBeyondRole(DomainError):
    """A grant wider than its role's bound: refused, so that what is stored is what holds."""

    def __init__(self, role: Role, beyond: Iterable[Scope]) -> None:
        self.role = role
        self.beyond = tuple(sorted(beyond))
        allowed = ", ".join(sorted(role.scope_bound))
        super().__init__(f"the role {role} may not hold {', '.join(self.beyond)} (it allows {allowed})")


@dataclass(frozen=True, slots=True)
class Tenant:
    tenant_id: str


@dataclass(frozen=True, slots=True)
class Principal:
    principal_id: str
    tenant_id: str
    role: Role
    allowed_scopes: frozenset[Scope]
    disabled: bool = False  # offboarded: holds no live token and is issued none until enabled

    @classmethod
    def new(cls, principal_id: str, tenant_id: str, role: Role, scopes: Iterable[Scope] | None = None) -> Principal:
        """A principal to add: granted `scopes` (default: its role's default) within its role's bound.

        The constructor itself does not check the bound: it also rebuilds principals from
        stored rows, on every authenticated call, and `scopes` narrows those anyway."""
        return cls(principal_id, tenant_id, role, role.grant(scopes))

    @property
    def scopes(self) -> frozenset[Scope]:
        """The scopes this principal may hold: its grant, within its role's bound."""
        return self.allowed_scopes & self.role.scope_bound

    def may_hold(self, scope: Scope) -> bool:
        """Whether `scope` is one of `scopes`, without building them."""
        return scope in self.allowed_scopes and scope in self.role.scope_bound


class ScopeEdit(StrEnum):
    SET = "set"
    ADD = "add"
    REMOVE = "remove"


@dataclass(frozen=True, slots=True)
class ScopeChange:
    """An operator's change of an existing principal's grant: set it to `scopes`, or add or
    remove them. A store applies it to the principal as it reads it in the change's own
    transaction, so that two changes at once each apply to what the other left."""

    edit: ScopeEdit
    scopes: frozenset[Scope]

    def applied(self, principal: Principal) -> Principal:
        """The principal with its grant changed. The scopes set or added are checked against
        its role's bound as a new principal's are (ScopesBeyondRole); a removal needs no check."""
        if self.edit is ScopeEdit.REMOVE:
            return replace(principal, allowed_scopes=principal.allowed_scopes - self.scopes)
        given = principal.role.grant(self.scopes)
        granted = given if self.edit is ScopeEdit.SET else principal.allowed_scopes | given
        return replace(principal, allowed_scopes=granted)


@dataclass(frozen=True, slots=True)
class Vault:
    vault_id: str
    tenant_id: str
    members: frozenset[str]


@dataclass(frozen=True, slots=True)
class EncryptedPayload:
    """An item's content as a client sealed it: opaque to the server, stored and answered as sent.
    The last three are sealing version 2's (empty before it)."""

    alg: str
    nonce: str
    aad: str
    ciphertext: str
    version: int
    commitment: str = ""
    signer: str = ""
    signature: str = ""


@dataclass(frozen=True, slots=True)
class WrappedKey:
    recipient_id: str
    wrap_alg: str
    wrapped_key: str


@dataclass(frozen=True, slots=True)
class Item:
    item_id: str
    tenant_id: str
    vault_id: str
    version: int
    kind: str
    title_hash: str
    updated_at: int  # Unix seconds: the contract's timestamps are whole seconds
    payload: EncryptedPayload | None
    wrapped_keys: tuple[WrappedKey, ...]
    deleted: bool = False

    @property
    def content(self) -> ItemContent | None:
        """What a client wrote to this item; None on a tombstone, whose content is erased."""
        if self.deleted or self.payload is None:
            return None
        return ItemContent(self.kind, self.title_hash, self.payload, self.wrapped_keys)

    def patched(self, patch: ItemPatch, now: int) -> Item:
        """This item with what `patch` writes at `now`, one version later; the rest as it was."""
        return Item(
            item_id=self.item_id,
            tenant_id=self.tenant_id,
            vault_id=self.vault_id,
            version=self.version + 1,
            kind=self.kind if patch.kind is None else patch.kind,
            title_hash=self.title_hash if patch.title_hash is None else patch.title_hash,
            updated_at=now,
            payload=self.payload if patch.payload is None else patch.payload,
            wrapped_keys=self.wrapped_keys if patch.wrapped_keys is None else patch.wrapped_keys,
        )

    def tombstone(self, now: int) -> Item:
        """This item deleted at `now`: crypto-shredded, one version later."""
        # Built directly, not with dataclasses.replace, which is slower: this runs on every delete.
        return Item(
            item_id=self.item_id,
            tenant_id=self.tenant_id,
            vault_id=self.vault_id,
            version=self.version + 1,
            kind=self.kind,
            title_hash="",
            updated_at=now,
            payload=None,
            wrapped_keys=(),
            deleted=True,
        )


@dataclass(frozen=True, slots=True)
class ItemContent:
    """What a client writes to a new item, all of it at once: the server cannot merge ciphertexts.
    An update without a field mask writes all of it too (ItemPatch.replacing)."""

    kind: str
    title_hash: str
    payload: EncryptedPayload
    wrapped_keys: tuple[WrappedKey, ...]  # in the client's order: a retry must repeat it exactly

    def new_item(self, item_id: str, tenant_id: str, vault_id: str, now: int) -> Item:
        """A new item holding this content, at version 1."""
        return Item(
            item_id=item_id,
            tenant_id=tenant_id,
            vault_id=vault_id,
            version=1,
            kind=self.kind,
            title_hash=self.title_hash,
            updated_at=now,
            payload=self.payload,
            wrapped_keys=self.wrapped_keys,
        )


@dataclass(frozen=True, slots=True)
class ItemPatch:
    """What an update writes: each field that is not None. The item keeps the others, so that
    sharing an item (new wrapped keys) does not send its ciphertext again, and a field added to
    items later is never cleared by a client that does not know it."""

    kind: str | None = None
    title_hash: str | None = None
    payload: EncryptedPayload | None = None
    wrapped_keys: tuple[WrappedKey, ...] | None = None  # in the client's order, as in ItemContent

    @classmethod
    def replacing(cls, content: ItemContent) -> ItemPatch:
        """All of the content: what an update without a field mask writes."""
        return cls(content.kind, content.title_hash, content.payload, content.wrapped_keys)

    def is_in(self, item: Item) -> bool:
        """Whether the item holds what this writes (a tombstone holds nothing)."""
        return not item.deleted and all(
            wanted is None or wanted == held
            for wanted, held in (
                (self.kind, item.kind),
                (self.title_hash, item.title_hash),
                (self.payload, item.payload),
                (self.wrapped_keys, item.wrapped_keys),
            )
        )


@dataclass(frozen=True, slots=True)
class ItemChange:
    """An item as of one change (a create, an update or a delete) and that change's vault sequence number."""

    item: Item
    sequence: int


# A delete's change: the tombstone and the sequence number of the delete.
Tombstone = ItemChange


def new_epoch() -> str:
    """A new epoch of a store: the identity of its history of changes, which `zkplatform admin
    epoch rotate` replaces after a restore from a backup. 128 random bits as 32 lowercase hex
    digits, the form the migrations give a store's first epoch. Random, not counted: a store
    restored twice from one backup must not give the second history the first one's epoch."""
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class ItemPage:
    """Some of a vault's items, by item_id, and the vault's sequence number and the store's
    epoch in the same snapshot."""

    items: tuple[Item, ...]
    sequence: int
    epoch: str


@dataclass(frozen=True, slots=True)
class ChangePage:
    """The changes of a vault after a cursor, in ascending sequence, each item once (as of its
    latest change), with the vault's sequence and purge horizon and the store's epoch read in
    the same snapshot."""

    changes: tuple[ItemChange, ...]
    sequence: int  # of the vault's latest change; 0 for a vault the store does not have
    purge_horizon: int  # the highest sequence of a tombstone purged from the vault; 0 if none
    epoch: str  # the store's


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """What the server keeps of a token: never the secret, only its HMAC."""

    token_id: str
    secret_hash: bytes
    tenant_id: str
    principal_id: str
    scopes: frozenset[Scope]
    issued_at: int
    expires_at: int
    pop_key_id: str = ""
    minted: bool = False  # minted through the API (counts against the cap), not issued by an operator
    revoked: bool = False
    parent_token_id: str = ""  # the token it was minted from; "" when an operator issued it
    last_used_at: int | None = None  # recorded at most once a minute (see Authenticator); None if never

    def is_live(self, now: int) -> bool:
        return not self.revoked and now < self.expires_at

    def as_revoked(self) -> TokenRecord:
        """This token, revoked."""
        # Built directly, not with dataclasses.replace, which is slower: a revocation revokes
        # a whole tree of tokens.
        return TokenRecord(
            token_id=self.token_id,
            secret_hash=self.secret_hash,
            tenant_id=self.tenant_id,
            principal_id=self.principal_id,
            scopes=self.scopes,
            issued_at=self.issued_at,
            expires_at=self.expires_at,
            pop_key_id=self.pop_key_id,
            minted=self.minted,
            revoked=True,
            parent_token_id=self.parent_token_id,
            last_used_at=self.last_used_at,
        )
