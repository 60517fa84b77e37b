"""--input-layout channels-last: the program takes a 4-D input NHWC, the NPU needs no input
transpose, and the deploy still takes NCHW inputs and hands each side the program's bytes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sdk.cache import Cache
from sdk.deploy.tune import AUTO, candidates, interface, model_layouts
from sdk.errors import UsageError
from sdk.firmware.boards import load_board
from sdk.program.layout import (
    AS_MODEL,
    CHANNELS_LAST,
    CHANNELS_LAST_ORDER,
    from_memory_order,
    to_memory_order,
)

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests" / "deploy" / "models"
CONV = str(MODELS / "tune_conv.py")  # a [1, 8, 8, 8] input, a [1, 256, 8, 8] output
POINTS = str(MODELS / "blob_classifier.py")  # 2-D inputs: no channels-last form


def test_the_tuner_offers_channels_last_only_for_4d_inputs():
    assert model_layouts(CONV) == [AS_MODEL, CHANNELS_LAST]
    assert model_layouts(POINTS) == [AS_MODEL]
    with pytest.raises(UsageError, match="no 4-D input"):
        model_layouts(POINTS, [CHANNELS_LAST])
    board = load_board("corstone300")
    assert interface(CONV, None, None) == (["float"], [AS_MODEL])  # the model's, by default
    assert interface(CONV, None, [AUTO]) == (["float"], [AS_MODEL, CHANNELS_LAST])
    with pytest.raises(UsageError, match="no 4-D input"):
        interface(POINTS, None, [CHANNELS_LAST])
    ios, layouts = interface(CONV, [AUTO], [AUTO])
    both = candidates(board, ios=ios, layouts=layouts)
    assert len(both) == 3 * 2 * 2 * 2  # memory x --optimise x --io x input layout
    assert {c.input_layout for c in candidates(board, layouts=model_layouts(POINTS))} == {AS_MODEL}
    assert "in=channels-last" in both[1].name and "in=" not in both[0].name


def test_memory_order_is_nhwc_and_undone():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.int8).reshape(2, 3, 4, 5)
    stored = to_memory_order(x, CHANNELS_LAST_ORDER)
    assert stored.shape == x.shape  # the logical shape, the bytes NHWC
    assert stored.tobytes() == x.transpose(0, 2, 3, 1).tobytes() != x.tobytes()
    assert np.array_equal(from_memory_order(stored, CHANNELS_LAST_ORDER), x)
    assert to_memory_order(x, (0, 1, 2, 3)) is x


def _npu_ops(program_path: Path) -> Counter:
    from sdk.ethosu.stream.decode import decode_cmd_data
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    ops: Counter = Counter()
    for info in read_delegates(load_program(program_path)):
        if info.vela is not None:
            ops.update(op.kind for op in decode_cmd_data(info.vela.blocks["cmd_data"]).operations)
    return ops


@pytest.mark.slow
def test_channels_last_program_has_no_transposes_on_the_npu(tmp_path):
    from sdk.deploy.tune import npu_timing
    from sdk.export.pipeline import export_model
    from sdk.program.pte import load_program

    results = {
        layout: export_model(CONV, tmp_path / layout, io="int", input_layout=layout)
        for layout in (AS_MODEL, CHANNELS_LAST)
    }
    ops = {layout: _npu_ops(r.program_path) for layout, r in results.items()}
    # As the model: the input and the output are transposed by row-by-row POOL operations.
    assert ops[AS_MODEL]["POOL"] > 100
    # Channels-last: the model's three convolutions, nothing else.
    assert ops[CHANNELS_LAST] == Counter({"CONV": 3, "STOP": 1})
    assert sum(ops[CHANNELS_LAST].values()) < sum(ops[AS_MODEL].values())
    programs = {layout: load_program(r.program_path) for layout, r in results.items()}
    assert programs[CHANNELS_LAST].inputs()[0].dim_order == CHANNELS_LAST_ORDER
    assert programs[AS_MODEL].inputs()[0].dim_order == (0, 1, 2, 3)
    cycles = {layout: npu_timing(p)[0] for layout, p in programs.items()}
    assert cycles[CHANNELS_LAST] < cycles[AS_MODEL] / 2
    assert results[CHANNELS_LAST].report["io"]["input_layout"] == CHANNELS_LAST


@pytest.mark.slow
@pytest.mark.parametrize("io", ["int", "float"])
def test_channels_last_deploy_passes_on_qemu(tmp_path, monkeypatch, io):
    """NCHW inputs in, the firmware handed NHWC bytes; with --io float the CPU's quantize and
    dequantize take the channels-last tensors too (elementwise: the firmware allows them). The
    firmware from the shared cache, as every QEMU deploy test's."""
    from sdk.deploy.pipeline import deploy

    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp"))
    report = deploy(CONV, target="qemu", io=io, input_layout=CHANNELS_LAST, outdir=tmp_path,
                    cache=Cache())  # fmt: skip
    assert report.passed, report.failure
    data = json.loads((tmp_path / "deploy.json").read_text())
    assert data["io"]["input_layout"] == CHANNELS_LAST


@pytest.mark.slow
def test_nchw_bytes_fed_to_a_channels_last_program_fail_the_verdict(tmp_path, monkeypatch):
    """The firmware handed the user's NCHW bytes as they are (the conversion skipped)."""
    import sdk.targets.linked
    from sdk.deploy.pipeline import deploy

    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp"))
    monkeypatch.setattr(sdk.targets.linked, "program_inputs", lambda program, arrays: arrays)
    report = deploy(CONV, target="qemu", io="int", input_layout=CHANNELS_LAST, outdir=tmp_path,
                    cache=Cache())  # fmt: skip
    assert not report.passed and "host reference" in report.failure
