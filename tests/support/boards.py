"""A board loaded from an edited copy of its board.yaml (tests of limits the real board has not)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from sdk.environment.paths import BOARDS_DIR
from sdk.firmware.boards import SCHEMA_FILE, Board, load_board


def board_copy(tmp_path: Path, edit) -> Board:
    """corstone300 loaded from a copy in tmp_path whose board.yaml `edit` changed."""
    boards = tmp_path / "boards"
    folder = boards / "corstone300"
    shutil.copytree(BOARDS_DIR / "corstone300", folder)
    shutil.copy(BOARDS_DIR / SCHEMA_FILE, boards / SCHEMA_FILE)
    data = yaml.safe_load((folder / "board.yaml").read_text())
    edit(data)
    (folder / "board.yaml").write_text(yaml.safe_dump(data))
    return load_board("corstone300", boards)
