"""A labgrid farm on loopback for the tests of this folder (localfarm.py): labgrid's own
coordinator and exporter, four QEMU boards behind places c300-1..4 (c300-4 on a serial device
the exporter serves through ser2net, as a lab's USB serial port), made once per module."""

from __future__ import annotations

import pytest

from tests.support.localfarm import LocalFarm


@pytest.fixture(scope="module")
def farm(every_kernel_elf, tmp_path_factory):
    """Four places, each board flashed with the firmware holding every kernel."""
    started = LocalFarm(tmp_path_factory.mktemp("farm"))
    try:
        yield started.start(4, every_kernel_elf, pty_places=1)
    finally:
        started.close()


@pytest.fixture(scope="module")
def farm_cache(tmp_path_factory):
    """One SDK cache for the module: each model is exported once."""
    root = tmp_path_factory.mktemp("farm_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        yield root
