"""VaultService: protobuf <-> the vault use cases."""

from __future__ import annotations

from zkplatform_api.platform.v1.vault_connect import VaultService


class VaultServicer(VaultService):
    """DeleteItem answers `unimplemented` until the vault use cases land."""
