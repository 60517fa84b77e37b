"""The link's and the flasher's failures are SdkErrors: the CLI prints one `error:` line."""

from __future__ import annotations

import pytest

from sdk.cli.main import main
from sdk.errors import FirmwareRefused, FlashError, SdkError
from sdk.link import protocol as p


def refuse() -> None:
    code, kind = 7, 0x0010
    raise FirmwareRefused(p.parse_error(bytes([code, 3, kind, 0]) + b"Bad" + b"no program"))


def no_drive() -> None:
    raise FlashError("no V2M-MPS3 drive is mounted")


@pytest.mark.parametrize(
    ("fail", "words"),
    [
        (lambda: p.decode_frame(b"\x05ab"), "bad COBS"),  # a frame error, as the link reads it
        (lambda: p.parse_info(b"\x01\x00"), "INFO"),  # a payload of the wrong layout
        (refuse, "Bad (code 7): no program"),
        (no_drive, "no V2M-MPS3 drive"),
    ],
    ids=["FrameError", "PayloadError", "FirmwareRefused", "FlashError"],
)
def test_each_is_one_error_line_and_exit_1(fail, words, monkeypatch, capsys):
    def handler(args) -> int:
        fail()
        return 0

    monkeypatch.setattr("sdk.cli.cache.run_info", handler)
    with pytest.raises(SdkError):
        fail()
    assert main(["cache", "info"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: ") and words in err
