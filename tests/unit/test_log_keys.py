"""The key log's settings and files: log keys (configured, made beside a SQLite database, made on
purpose with `zkplatform log-key generate`, refused on PostgreSQL without one), the witnesses
file and the quorum; every fault one line naming the file, never a private key's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkplatform.cli import main
from zkplatform.config import ConfigError, Settings
from zkplatform.domain.checkpoints import LogKeys
from zkplatform.log_keys import (
    local_log_key,
    log_keys_for,
    read_log_keys,
    read_witnesses,
    witness_quorum,
)
from zkplatform_tlog.note import NoteSigner, generate_cosigner_key, generate_signer_key


def key_file(path: Path, name: str = "log.example.com") -> tuple[Path, str]:
    skey, vkey = generate_signer_key(name)
    path.write_text(skey + "\n")
    return path, vkey


def test_the_configured_key_files_sign_in_their_order(tmp_path: Path) -> None:
    (new, new_vkey), (old, old_vkey) = key_file(tmp_path / "new"), key_file(tmp_path / "old")

    keys = log_keys_for(Settings(log_key_files=(new, old), store_url="postgresql://db/zk"))

    assert keys.vkeys() == (new_vkey, old_vkey)
    assert keys.origin("acme") == "log.example.com/acme/key-log/v1"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("", "holds no Ed25519 note private key"),
        ("PRIVATE+KEY+log.example.com+00000000+AQ==", "holds no Ed25519 note private key (malformed-key)"),
        ("\xff" * 10, "holds no Ed25519 note private key"),
    ],
)
def test_a_key_file_that_holds_no_key_is_named(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "log.key"
    path.write_text(content)

    with pytest.raises(ConfigError) as refused:
        read_log_keys([path])

    assert f"the log key file {path} {says}" in str(refused.value)
    assert "zkplatform log-key generate" in str(refused.value)


def test_a_missing_key_file_is_named_without_the_text_of_others(tmp_path: Path) -> None:
    good, _ = key_file(tmp_path / "good")

    with pytest.raises(ConfigError) as refused:
        read_log_keys([good, tmp_path / "missing"])

    assert str(refused.value) == f"cannot read the log key file {tmp_path / 'missing'} (No such file or directory)"
    assert "PRIVATE" not in str(refused.value)


def test_log_keys_of_two_names_or_one_key_twice_are_refused(tmp_path: Path) -> None:
    one, _ = key_file(tmp_path / "one")
    other, _ = key_file(tmp_path / "other", "another.example.com")

    with pytest.raises(ConfigError, match="every log key must have the same name"):
        read_log_keys([one, other])
    with pytest.raises(ConfigError, match="the same log key is given twice"):
        read_log_keys([one, one])
    with pytest.raises(ValueError, match="at least one log key"):
        LogKeys(())


def test_a_sqlite_store_gets_its_own_key_made_once_beside_it(tmp_path: Path) -> None:
    settings = Settings(store_url=f"sqlite:///{tmp_path}/zk.db", log_name="log.test")

    first = log_keys_for(settings)
    again = log_keys_for(settings)

    path = tmp_path / "zk.db.log-key"
    assert first.vkeys() == again.vkeys()
    assert first.name == "log.test"
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "zk.db.log-key.pub").read_text() == first.vkeys()[0] + "\n"
    assert local_log_key(path, "another.name") == (first, False)


def test_postgresql_refuses_to_start_without_a_log_key() -> None:
    with pytest.raises(ConfigError) as refused:
        log_keys_for(Settings(store_url="postgresql://db/zk"))

    assert "zkplatform log-key generate --name NAME --out FILE" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_memory_store_gets_a_new_key_each_time() -> None:
    settings = Settings(store_url="memory:")

    assert log_keys_for(settings).vkeys() != log_keys_for(settings).vkeys()


def witnesses_file(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_the_witnesses_file_lists_keys_and_urls(tmp_path: Path) -> None:
    vkeys = [generate_cosigner_key(f"w{n}.example.com")[1] for n in range(2)]
    path = witnesses_file(
        tmp_path / "witnesses",
        "# the witnesses of this log",
        "",
        f"{vkeys[0]} https://w0.example.com/witness",
        f"  {vkeys[1]}\thttp://127.0.0.1:9000  ",
    )

    found = read_witnesses(path)

    assert [(w.verifier.vkey(), w.url) for w in found] == [
        (vkeys[0], "https://w0.example.com/witness"),
        (vkeys[1], "http://127.0.0.1:9000"),
    ]
    assert witness_quorum(Settings(), found) == 2
    assert witness_quorum(Settings(witness_quorum=1), found) == 1
    with pytest.raises(ConfigError, match="ZKPLATFORM_WITNESS_QUORUM is 3, but 2 witness"):
        witness_quorum(Settings(witness_quorum=3), found)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("just-one-part", "expected '<cosignature verifier key> <url>'"),
        ("{vkey} https://w.example.com extra", "expected '<cosignature verifier key> <url>'"),
        ("{note_vkey} https://w.example.com", "not a witness's cosignature/v1 verifier key (wrong-key-type)"),
        ("w+00000000+AQ== https://w.example.com", "not a witness's cosignature/v1 verifier key"),
        ("{vkey} ftp://w.example.com", "the witness URL must be http(s)://HOST[:PORT][/PATH]"),
        ("{vkey} https://w.example.com/?a=b", "the witness URL must be http(s)://HOST[:PORT][/PATH]"),
    ],
)
def test_a_bad_witness_line_is_named_by_its_number(tmp_path: Path, line: str, says: str) -> None:
    vkey = generate_cosigner_key("w.example.com")[1]
    note_vkey = generate_signer_key("w.example.com")[1]
    path = witnesses_file(tmp_path / "witnesses", "# first", line.format(vkey=vkey, note_vkey=note_vkey))

    with pytest.raises(ConfigError) as refused:
        read_witnesses(path)

    assert str(refused.value).startswith(f"{path} line 2: {says}")


def test_two_witnesses_of_one_name_are_refused(tmp_path: Path) -> None:
    vkeys = [generate_cosigner_key("w.example.com")[1] for _ in range(2)]
    path = witnesses_file(
        tmp_path / "witnesses", *(f"{vkey} https://w.example.com/{n}" for n, vkey in enumerate(vkeys))
    )

    with pytest.raises(ConfigError, match="two witnesses have the same key name"):
        read_witnesses(path)


def test_the_settings_come_from_the_environment_and_go_to_the_workers(tmp_path: Path) -> None:
    env = {
        "ZKPLATFORM_LOG_KEY_FILES": f"{tmp_path}/a.key, {tmp_path}/b.key",
        "ZKPLATFORM_LOG_NAME": "log.example.com",
        "ZKPLATFORM_WITNESSES_FILE": f"{tmp_path}/witnesses",
        "ZKPLATFORM_WITNESS_QUORUM": "0",
        "ZKPLATFORM_WITNESS_INTERVAL": "60",
        "ZKPLATFORM_WITNESS_TIMEOUT": "0.5",
    }

    settings = Settings.from_env(env)

    assert settings.log_key_files == (tmp_path / "a.key", tmp_path / "b.key")
    assert (settings.log_name, settings.witnesses_file) == ("log.example.com", tmp_path / "witnesses")
    assert (settings.witness_quorum, settings.witness_interval_seconds, settings.witness_timeout_seconds) == (
        0,
        60,
        0.5,
    )
    assert Settings.from_env(settings.to_env()) == settings
    defaults = Settings.from_env({})
    assert (defaults.log_key_files, defaults.witnesses_file, defaults.witness_quorum) == ((), None, None)
    assert (defaults.witness_interval_seconds, defaults.witness_timeout_seconds) == (300, 5.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ZKPLATFORM_WITNESS_QUORUM", "all"),
        ("ZKPLATFORM_WITNESS_INTERVAL", "0"),
        ("ZKPLATFORM_WITNESS_TIMEOUT", "0"),
        ("ZKPLATFORM_WITNESS_TIMEOUT", "301"),
        ("ZKPLATFORM_LOG_NAME", "a name"),
    ],
)
def test_a_bad_setting_is_a_config_error_naming_it(name: str, value: str) -> None:
    with pytest.raises(ConfigError):
        Settings.from_env({name: value})


def test_log_key_generate_writes_the_key_and_prints_its_verifier_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "keys" / "log.key"

    assert main(["log-key", "generate", "--name", "log.example.com", "--out", str(out)]) == 0

    vkey = capsys.readouterr().out.strip()
    signer = NoteSigner.from_skey(out.read_text().strip())
    assert signer.verifier().vkey() == vkey
    assert out.stat().st_mode & 0o777 == 0o600
    assert main(["log-key", "generate", "--name", "log.example.com", "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"zkplatform: {out} exists: the log key it holds is kept; name another file\n"
    assert NoteSigner.from_skey(out.read_text().strip()).verifier().vkey() == vkey


def test_log_key_generate_refuses_a_bad_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["log-key", "generate", "--name", "a+b", "--out", str(tmp_path / "k")])

    assert exit_.value.code == 2
    assert "a log name is 1 to 100 of" in capsys.readouterr().err
    assert not (tmp_path / "k").exists()


def test_a_cosignature_key_is_not_a_log_key(tmp_path: Path) -> None:
    skey, _ = generate_cosigner_key("w.example.com")
    (tmp_path / "k").write_text(skey)

    with pytest.raises(ConfigError, match="wrong-key-type"):
        read_log_keys([tmp_path / "k"])
