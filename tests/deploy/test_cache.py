"""The content-addressed cache: whole entries or none, keys that follow their inputs."""

from __future__ import annotations

import pytest

from sdk.cache import PARTIAL_PREFIX, Cache, default_root, digest


def fill_with(text: str):
    def fill(folder):
        (folder / "a.txt").write_text(text)
        (folder / "sub").mkdir()
        (folder / "sub" / "b.bin").write_bytes(b"\0" * 10)

    return fill


def test_put_then_get(tmp_path):
    cache = Cache(tmp_path / "c")
    key = digest({"x": 1})
    assert cache.get("program", key) is None
    entry = cache.put("program", key, fill_with("hello"), {"x": 1})
    assert cache.get("program", key) == entry
    assert (entry / "a.txt").read_text() == "hello"
    info = cache.info()
    (kind,) = info.kinds
    assert (kind.kind, kind.entries, kind.partial) == ("program", 1, 0)
    assert kind.bytes >= 15 and info.bytes == kind.bytes


def test_keys_follow_every_part_in_any_order():
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1, "b": [1, 2]}) != digest({"a": 1, "b": [2, 1]})
    assert digest({"a": 1}) != digest({"a": 2})


@pytest.mark.parametrize("error", [RuntimeError("export failed"), KeyboardInterrupt()])
def test_an_interrupted_fill_leaves_no_entry(tmp_path, error):
    cache = Cache(tmp_path / "c")

    def fill(folder):
        (folder / "half.txt").write_text("half")
        raise error

    with pytest.raises(type(error)):
        cache.put("program", "k", fill, {})
    assert cache.get("program", "k") is None
    assert list((tmp_path / "c" / "program").iterdir()) == []


def test_a_killed_writer_leftover_is_not_an_entry_and_clean_removes_it(tmp_path):
    cache = Cache(tmp_path / "c")
    leftover = tmp_path / "c" / "firmware" / f"{PARTIAL_PREFIX}k-123"
    leftover.mkdir(parents=True)
    (leftover / "executor_runner.elf").write_bytes(b"x")  # as a SIGKILL mid-write leaves it
    assert cache.get("firmware", "k") is None
    assert cache.info().kinds[0].partial == 1
    assert cache.clean() > 0
    assert not (tmp_path / "c").exists()


def test_clean_one_kind(tmp_path):
    cache = Cache(tmp_path / "c")
    cache.put("program", "p", fill_with("p"), {})
    cache.put("firmware", "f", fill_with("f"), {})
    cache.clean("program")
    assert cache.get("program", "p") is None and cache.get("firmware", "f") is not None


def test_disabled_cache_reads_nothing(tmp_path):
    Cache(tmp_path / "c").put("program", "k", fill_with("x"), {})
    assert Cache(tmp_path / "c", enabled=False).get("program", "k") is None


def test_root_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "mine"))
    assert default_root() == tmp_path / "mine"
    monkeypatch.delenv("SDK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "sdk"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / ".cache" / "sdk"


def test_cache_cli_info_and_clean(tmp_path, monkeypatch, capsys):
    from sdk.cli.main import main

    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "c"))
    Cache().put("program", "k", fill_with("x"), {})
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "c") in out and "program: 1 entry" in out
    assert main(["cache", "clean"]) == 0
    assert "bytes freed" in capsys.readouterr().out
    assert Cache().get("program", "k") is None


def test_a_damaged_entry_is_a_miss_and_put_replaces_it(tmp_path):
    cache = Cache(tmp_path / "c")
    entry = cache.put("program", "k", fill_with("hello"), {})
    (entry / "a.txt").write_text("hellO")  # same size, other bytes
    assert cache.get("program", "k") is None
    (entry / "entry.json").unlink()  # e.g. an interrupted clean: a folder without its record
    assert cache.get("program", "k") is None
    again = cache.put("program", "k", fill_with("hello"), {})
    assert cache.get("program", "k") == again and (again / "a.txt").read_text() == "hello"


def test_an_unwritable_cache_is_one_error(tmp_path):
    from sdk.errors import StorageError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="cannot write there"):
        Cache(blocker / "c").put("program", "k", fill_with("x"), {})
