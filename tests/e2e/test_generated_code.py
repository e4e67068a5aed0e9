"""The generated code lives under zkplatform_api, never shadowing the stdlib `platform`."""

from __future__ import annotations

import subprocess
import sys

from zkplatform_api.platform.v1 import broker_pb2, vault_pb2


def test_stdlib_platform_still_works_after_importing_generated_code() -> None:
    script = (
        "import zkplatform_api.platform.v1.vault_pb2, zkplatform_api.platform.v1.broker_connect\n"
        "import zkplatform.app\n"
        "import platform\n"
        "assert platform.system(), 'platform.system() returned nothing'\n"
        "assert platform.__file__.endswith('/platform.py'), platform.__file__\n"
        "print(platform.system())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_wire_names_are_the_contracts() -> None:
    assert vault_pb2.DESCRIPTOR.services_by_name["VaultService"].full_name == "platform.v1.VaultService"
    assert broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name == "platform.v1.BrokerService"
    assert vault_pb2.DESCRIPTOR.services_by_name["VaultService"].methods_by_name["DeleteItem"]
    assert broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].methods_by_name["MintUserApiToken"]
