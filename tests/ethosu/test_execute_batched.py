"""Runs of operations that differ only in base addresses, computed in batches
(sdk/ethosu/functional/execute.py
`_run`), against the same streams one operation at a time (BATCH_ELEMENTS 0: batches of one).

The batches must give what the stream gives in order: an operation that reads what an earlier
one of its run wrote sees it, the later of two writes to a byte stays, and a refusal names the
operation it concerns with the earlier ones done. Hand-made streams (test_execute_synthetic's
builders): a tiled copy, a chain, and random runs over a small memory where the operations'
feature maps overlap each other often.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional import execute as npu_execute
from sdk.ethosu.functional.execute import NpuState, execute
from sdk.ethosu.stream.decode import decode_cmd_data
from tests.ethosu.test_execute_synthetic import PRECISION, cmd_data, command, feature_map, place

I8 = np.int8


def run_both(data: bytes, memory: np.ndarray, monkeypatch) -> tuple[np.ndarray, NpuState]:
    """The stream batched and one by one: the same memory (or the same refusal) both ways."""
    decoded = decode_cmd_data(data)
    outcomes = []
    for limit in (npu_execute.BATCH_ELEMENTS, 0):
        monkeypatch.setattr(npu_execute, "BATCH_ELEMENTS", limit)
        state = NpuState({1: memory.copy()})
        try:
            execute(decoded, state)
            error = None
        except ProgramError as exc:
            error = str(exc)
        outcomes.append((state, error))
    (batched, error), (single, single_error) = outcomes
    assert error == single_error
    np.testing.assert_array_equal(batched.regions[1], single.regions[1])
    assert [e.index for e in batched.trace] == [e.index for e in single.trace]
    if error is not None:
        raise ProgramError(error)
    return batched.regions[1], batched


def copy_registers(shape, dtype=I8) -> list[list[int]]:
    """A 1x1 AVERAGE pool that copies (OFM_SCALE 1 >> 0): Vela's copies and transposes."""
    return [
        *feature_map("IFM", 0, shape, dtype),
        *feature_map("OFM", 0, shape, dtype),
        command("NPU_SET_OFM_PRECISION", activation_type=1,
                activation_precision=PRECISION[dtype], scale_mode=1, round_mode=2),
        command("NPU_SET_OFM_SCALE", scale=1, shift=0),
    ]  # fmt: skip


def bases(ifm: int, ofm: int) -> list[list[int]]:
    return [command("NPU_SET_IFM_BASE0", addr=ifm), command("NPU_SET_OFM_BASE0", addr=ofm)]


def test_a_tiled_copy_runs_in_batches_and_keeps_a_trace_entry_per_operation(monkeypatch):
    """Rows of a (16, 8, 4) map copied one (1, 8, 4) tile at a time, in reverse row order."""
    x = np.random.default_rng(1).integers(-128, 128, (16, 8, 4), dtype=I8)
    memory = np.zeros(2048, dtype=np.uint8)
    place(memory, 0, x)
    ops = [copy_registers((1, 8, 4))]
    for row in range(16):
        ops += [bases(row * 32, 1024 + (15 - row) * 32), [command("NPU_OP_POOL", pooling_mode=1)]]
    got, state = run_both(cmd_data(*[c for op in ops for c in op]), memory, monkeypatch)
    np.testing.assert_array_equal(got[1024:1536].view(I8).reshape(16, 8, 4), x[::-1])
    assert len(state.trace) == 16 and {e.mode for e in state.trace} == {"AVERAGE"}


def test_an_operation_sees_what_an_earlier_one_of_its_run_wrote(monkeypatch):
    """ADD 1 from each slot into the next: slot k ends at slot 0 + k (a batch would give 1)."""
    shape = (2, 3, 4)
    memory = np.zeros(1024, dtype=np.uint8)
    regs = [
        *feature_map("IFM", 0, shape, I8),
        *feature_map("OFM", 0, shape, I8),
        command("NPU_SET_IFM2_BROADCAST", broadcast_constant=1),
        command("NPU_SET_IFM2_SCALAR", scalar=1),
        command("NPU_SET_IFM2_PRECISION", activation_type=1),
        command("NPU_SET_OPA_SCALE", scale=1),
        command("NPU_SET_OPB_SCALE", scale=1),
    ]
    for k in range(20):
        regs += [*bases(k * 24, (k + 1) * 24), command("NPU_OP_ELEMENTWISE", elementwise_mode=1)]
    got, _ = run_both(cmd_data(*regs), memory, monkeypatch)
    slots = got[: 21 * 24].view(I8).reshape(21, 24)
    np.testing.assert_array_equal(slots, np.repeat(np.arange(21, dtype=I8)[:, None], 24, axis=1))


def test_the_later_of_two_writes_to_a_byte_stays(monkeypatch):
    shape = (1, 4, 2)
    memory = (np.arange(256) % 100).astype(np.uint8)
    regs = copy_registers(shape)
    for ifm, ofm in ((0, 200), (8, 204), (16, 200), (24, 240)):  # 2nd and 3rd overlap the 1st
        regs += [*bases(ifm, ofm), command("NPU_OP_POOL", pooling_mode=1)]
    got, _ = run_both(cmd_data(*regs), memory, monkeypatch)
    np.testing.assert_array_equal(got[200:212], [*range(16, 24), *range(12, 16)])


def test_a_refusal_in_a_run_names_its_operation_after_the_earlier_ones(monkeypatch):
    shape = (1, 4, 2)
    memory = np.arange(256, dtype=np.uint8)
    regs = copy_registers(shape)
    for ofm in (100, 108, 250, 116):  # the third reaches past the region's 256 bytes
        regs += [*bases(0, ofm), command("NPU_OP_POOL", pooling_mode=1)]
    with pytest.raises(ProgramError, match=r"operation 2 OFM: element .* outside its region"):
        run_both(cmd_data(*regs), memory, monkeypatch)


def random_run(rng: np.random.Generator, size: int) -> list[list[int]]:
    """Registers of one random POOL or ELEMENTWISE operation, then a run of it at random
    bases: maps from a few slots of the memory, so that they often overlap each other."""
    h, w, c = (int(v) for v in rng.integers(1, 5, 3))
    dtype = I8 if rng.random() < 0.7 else np.int16
    elem = np.dtype(dtype).itemsize
    kind = rng.choice(["copy", "max", "average", "add", "mul", "abs", "broadcast"])
    tiles = None
    ifm_shape = (h, w, c)
    regs: list[list[int]] = []
    if kind in ("max", "average"):
        k, stride = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        pad = int(rng.integers(0, 2)) if kind == "max" else 0
        ifm_shape = ((h - 1) * stride + k - 2 * pad, (w - 1) * stride + k - 2 * pad, c)
        if min(ifm_shape[:2]) < 1:
            ifm_shape, pad = ((h - 1) * stride + k, (w - 1) * stride + k, c), 0
        regs += [
            command("NPU_SET_KERNEL_HEIGHT_M1", height_m1=k - 1),
            command("NPU_SET_KERNEL_WIDTH_M1", width_m1=k - 1),
            command("NPU_SET_KERNEL_STRIDE", stride_x_lsb=stride - 1, stride_y_lsb=stride - 1),
            *(command(f"NPU_SET_IFM_PAD_{side}", pad=pad) for side in ("TOP", "LEFT")),
            *(command(f"NPU_SET_IFM_PAD_{side}", pad=pad) for side in ("BOTTOM", "RIGHT")),
            command("NPU_SET_OFM_SCALE", scale=int(rng.integers(1, 1 << 16)), shift=16),
        ]
    elif ifm_shape[0] > 1 and rng.random() < 0.5:
        tiles = (int(rng.integers(1, ifm_shape[0])), 0)  # rows past HEIGHT0 in tile 2
    regs += feature_map("IFM", 0, ifm_shape, dtype, tiles=tiles)
    regs += feature_map("OFM", 0, (h, w, c), dtype)
    precision = {"activation_precision": PRECISION[dtype], "scale_mode": 1, "round_mode": 2}
    regs.append(command("NPU_SET_OFM_PRECISION", activation_type=1, **precision))
    regs.append(command("NPU_SET_OFM_ZERO_POINT", zero_point=int(rng.integers(-3, 4)) & 0xFFFF))
    two = kind in ("add", "mul", "broadcast")
    if two:
        extent = (1, w, c) if kind == "broadcast" else (h, w, c)
        regs += feature_map("IFM2", 0, extent, dtype)
        regs += [
            command("NPU_SET_IFM2_BROADCAST", broadcast_h=int(kind == "broadcast")),
            command("NPU_SET_OPA_SCALE", scale=int(rng.integers(1, 4))),
            command("NPU_SET_OPB_SCALE", scale=int(rng.integers(1, 4))),
        ]
    op = {
        "copy": command("NPU_OP_POOL", pooling_mode=1),
        "max": command("NPU_OP_POOL", pooling_mode=0),
        "average": command("NPU_OP_POOL", pooling_mode=1),
        "add": command("NPU_OP_ELEMENTWISE", elementwise_mode=1),
        "broadcast": command("NPU_OP_ELEMENTWISE", elementwise_mode=2),  # SUB
        "mul": command("NPU_OP_ELEMENTWISE", elementwise_mode=0),
        "abs": command("NPU_OP_ELEMENTWISE", elementwise_mode=6),
    }[kind]
    slot = 64  # bytes: every map here fits in 2 slots (tile 2 gets a slot of its own)
    slots = size // slot - 2

    def place_at() -> int:
        return int(rng.integers(0, slots)) * slot + int(rng.integers(0, 4)) * elem

    for _ in range(int(rng.integers(1, 24))):
        regs += [command("NPU_SET_IFM_BASE0", addr=place_at()),
                 command("NPU_SET_OFM_BASE0", addr=place_at())]  # fmt: skip
        if tiles is not None:
            regs.append(command("NPU_SET_IFM_BASE2", addr=place_at()))
        if two:
            regs.append(command("NPU_SET_IFM2_BASE0", addr=place_at()))
        regs.append(op)
    return regs


@pytest.mark.parametrize("seed", range(40))
def test_random_runs_over_overlapping_maps_give_what_one_by_one_gives(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    size = 1024
    memory = rng.integers(0, 256, size, dtype=np.uint8)
    regs = [r for _ in range(int(rng.integers(1, 5))) for r in random_run(rng, size)]
    try:
        run_both(cmd_data(*regs), memory, monkeypatch)
    except ProgramError as refused:  # both refused alike (saturation, an overlapping OFM)
        assert "NPU executor" in str(refused) or "operation" in str(refused)


def test_progress_is_reported_between_operations_and_at_the_end():
    shape = (1, 4, 2)
    regs = copy_registers(shape)
    for k in range(10):
        regs += [*bases(k * 8, 128 + k * 8), command("NPU_OP_POOL", pooling_mode=1)]
    decoded = decode_cmd_data(cmd_data(*regs))
    seen: list[tuple[int, int]] = []
    execute(decoded, NpuState({1: np.zeros(256, np.uint8)}), lambda *done: seen.append(done))
    total = len(decoded.operations)  # the pools and STOP
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
