"""bench/firmware_size.py: the runtime core stays within its 16 KiB .text budget."""

from __future__ import annotations

import re
import subprocess
import sys

from sdk.paths import REPO_ROOT


def test_runtime_core_text_within_budget(programs):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "firmware_size.py"),
            "--pte",
            str(programs["add"]),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    linked = re.search(r"^runtime core \(linked\)\s+(\d+)\s+(\d+)\s+(\d+)", result.stdout, re.M)
    whole = re.search(r"^whole firmware \(ELF\)\s+(\d+)", result.stdout, re.M)
    assert linked and whole, result.stdout
    core_text = int(linked.group(1))
    assert 4096 < core_text <= 16 * 1024, result.stdout
    assert int(whole.group(1)) > core_text
    assert "goal: runtime core .text <= 16384 bytes (linked): met" in result.stdout
