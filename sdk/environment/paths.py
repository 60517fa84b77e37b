"""Where the SDK's non-Python parts live (the repository checkout it is installed from)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # sdk/environment/paths.py
FIRMWARE_DIR = REPO_ROOT / "firmware"
KERNELS_DIR = REPO_ROOT / "kernels"
BOARDS_DIR = REPO_ROOT / "boards"
# SCons object folders (incremental builds); $SDK_BUILD_DIR moves them (e.g. a fresh one).
BUILD_DIR = Path(os.environ.get("SDK_BUILD_DIR") or REPO_ROOT / "build")
