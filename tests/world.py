"""Test data: the development data set, with lookups by name, and a clock tests can move."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from zkplatform import devmode
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain.models import Item
from zkplatform.wiring import Platform

START = 1_800_000_000  # 2027-01-15T08:00:00Z
PEPPER = b"test-pepper-of-thirty-two-bytes!"
BASE_URL = "http://testserver"


class FakeClock:
    """Whole seconds, moved only by the test."""

    def __init__(self, now: int = START) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: int) -> None:
        self.now += seconds


@dataclass
class World:
    platform: Platform
    tenants: list[devmode.DevTenant]

    @classmethod
    async def seed(cls, platform: Platform, *, keys: bool = True) -> World:
        return cls(platform, await devmode.seed(platform.store, platform.issuer, platform.clock, keys=keys))

    def token(self, principal_id: str) -> str:
        for tenant in self.tenants:
            for principal in tenant.principals:
                if principal["principalId"] == principal_id:
                    return principal["token"]
        raise KeyError(principal_id)

    def vault(self, vault_id: str) -> dict[str, Any]:
        for tenant in self.tenants:
            for vault in tenant.vaults:
                if vault["vaultId"] == vault_id:
                    return vault
        raise KeyError(vault_id)

    def all_tokens(self) -> list[str]:
        return [p["token"] for t in self.tenants for p in t.principals]

    async def item(self, vault_id: str, item_id: str) -> Item:
        item = await self.platform.store.get_item(vault_id, item_id)
        assert item is not None
        return item


async def serve_in_process(platform: Platform) -> httpx.AsyncClient:
    """A client of the whole app around `platform`, in-process (close it after use)."""
    app = create_app(Settings(), platform=platform)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)
