"""Where the SDK's non-Python parts live (the repository checkout it is installed from)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIRMWARE_DIR = REPO_ROOT / "firmware"
KERNELS_DIR = REPO_ROOT / "kernels"
BOARDS_DIR = REPO_ROOT / "boards"
BUILD_DIR = REPO_ROOT / "build"
