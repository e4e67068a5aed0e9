"""ZKPLATFORM_STORE_POOL_SIZE: each worker's PostgreSQL pool, 10 unless set, handed to the workers."""

from __future__ import annotations

import pytest

from zkplatform.config import ConfigError, Settings


def test_the_pool_size_is_10_unless_set_and_reaches_the_workers() -> None:
    assert Settings.from_env({}).store_pool_size == 10
    chosen = Settings.from_env({"ZKPLATFORM_STORE_POOL_SIZE": "25"})

    assert chosen.store_pool_size == 25
    assert Settings.from_env(chosen.to_env()).store_pool_size == 25


@pytest.mark.parametrize("raw", ["0", "-1", "ten", "10001"])
def test_a_pool_size_that_cannot_be_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError, match=r"^ZKPLATFORM_STORE_POOL_SIZE must be a whole number from 1 to 10000"):
        Settings.from_env({"ZKPLATFORM_STORE_POOL_SIZE": raw})
