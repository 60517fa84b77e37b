"""A labgrid farm on loopback for the tests of this folder (localfarm.py): labgrid's own
coordinator and exporter, three QEMU boards behind places c300-1..3, made once per module."""

from __future__ import annotations

import pytest
from localfarm import LocalFarm


@pytest.fixture(scope="module")
def farm(every_kernel_elf, tmp_path_factory):
    """Three places, each board flashed with the firmware holding every kernel."""
    started = LocalFarm(tmp_path_factory.mktemp("farm"))
    try:
        yield started.start(3, every_kernel_elf)
    finally:
        started.close()


@pytest.fixture(scope="module")
def farm_cache(tmp_path_factory):
    """One SDK cache for the module: each model is exported once."""
    root = tmp_path_factory.mktemp("farm_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        yield root
