"""The virtual Ethos-U85 (sdk/ethosu/device.py VirtualU85): the U55's model with the U85's
register file, ID and CONFIG, and jobs that are run and timed (sdk/ethosu/cycles_u85.py).
Register numbers are regor's (ethos_u85_interface.hpp, Vela 5.1.0), as the firmware's
driver.h has them; the firmware's driver against it end to end: tests/firmware/test_fvp.py
(the Corstone-320 deploy). Here with a fake session and executor: no firmware."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from sdk.errors import TargetError, UsageError
from sdk.ethosu.device import (
    CMD_RUN,
    CYCLE_BIT,
    SHARED,
    STATUS_END,
    U55,
    U85,
    Delegate,
    VirtualU55,
    VirtualU85,
    id_and_config,
    layout_of,
)
from sdk.ethosu.payload import NpuTensor, VelaStream
from sdk.link import protocol as p
from sdk.program.pte import load_program
from sdk.program.tosa_file import TosaGraphInfo, TosaTensorInfo
from sdk.targets.host import run_host
from sdk.targets.linked import run_linked, virtual_npu_of
from tests.ethosu.test_u55_keepalive import FakeSession
from tests.support.hostlink import host_link

REG = U85.reg


def test_the_u85_keeps_the_u55_s_control_registers_and_has_its_own():
    for name, offset in SHARED.items():
        assert U55.reg[name] == REG[name] == offset
    assert (SHARED["CONFIG"], SHARED["REGIONCFG"], SHARED["BASEP0"]) == (0x28, 0x3C, 0x80)
    # regor's numbers (the firmware's driver.h: MEM_ATTR0, AXI_SRAM, AXI_EXT, PMU_U85)
    assert [REG[f"MEM_ATTR{n}"] for n in range(4)] == [0x40, 0x44, 0x48, 0x4C]
    assert (REG["AXI_SRAM"], REG["AXI_EXT"]) == (0x50, 0x54)
    assert (REG["PMCR"], REG["PMCNTENSET"], REG["PMCNTENCLR"]) == (0x1180, 0x1184, 0x1188)
    assert (REG["PMCCNTR_LO"], REG["PMCCNTR_HI"], REG["PMCCNTR_CFG"]) == (0x11A0, 0x11A4, 0x11A8)
    assert (REG["PMEVCNTR0"], REG["PMEVCNTR7"], REG["PMEVTYPER7"]) == (0x1300, 0x131C, 0x139C)
    assert not any(name.startswith("AXI_LIMIT") for name in REG)  # the U55's, at MEM_ATTR's place
    assert U55.reg["PMCR"] == 0x180 and U55.event_counters == 4 and U85.event_counters == 8
    # STATUS: bit 7 is the U55's wd_fault, reserved on the U85; bit 9 the U85's branch_fault
    assert U55.faults & (1 << 7) and not U55.faults & (1 << 9)
    assert U85.faults & (1 << 9) and not U85.faults & (1 << 7)


def test_id_and_config_are_vela_s_payload_words_per_mac_count():
    assert id_and_config("ethos-u85-128") == (0x20007000, 0x20000117)
    assert id_and_config("ethos-u85-2048") == (0x20007000, 0x2000261B)
    npu = VirtualU85("ethos-u85-256")
    assert (npu.read(REG["ID"]), npu.read(REG["CONFIG"])) == (0x20007000, 0x20000118)
    assert npu.read(REG["CONFIG"]) >> 28 == 2  # product: the U85
    assert npu.read(REG["PMCR"]) >> 11 == 8  # num_event_cnt
    assert npu.name == "virtual U85"


def test_the_layout_comes_from_the_npu_config():
    assert layout_of("ethos-u85-128") is U85 and layout_of("ethos-u55-64") is U55
    with pytest.raises(UsageError, match="no virtual NPU"):
        layout_of("ethos-u65-256")
    with pytest.raises(UsageError, match="is no Ethos-U55"):
        VirtualU55("ethos-u85-128")
    with pytest.raises(UsageError, match="is no Ethos-U85"):
        VirtualU85("ethos-u55-128")


def test_the_pmu_lives_at_0x1180_and_another_layout_s_writes_are_noted():
    npu = VirtualU85("ethos-u85-128")
    writes = [(REG["PMCNTENSET"], CYCLE_BIT | 0xFF), (REG["PMCNTENCLR"], 0x80)]
    npu.handle(FakeSession(bytearray(16)), p.NpuRegs(0, tuple(writes), None))  # type: ignore[arg-type]
    assert npu.read(REG["PMCNTENSET"]) == npu.read(REG["PMCNTENCLR"]) == CYCLE_BIT | 0x7F
    assert npu.unknown_writes == []
    # the U55's PMCR and AXI_LIMIT-free layout: a U55 driver on a U85 writes where nothing is
    npu.handle(FakeSession(bytearray(16)), p.NpuRegs(1, ((U55.reg["PMCR"], 5),), None))  # type: ignore[arg-type]
    assert npu.unknown_writes == [0x180]


class AddOne:
    """An executor adding 1 to an int8 tensor of 8."""

    name = "fake executor"

    def io(self, delegate_index: int) -> TosaGraphInfo:
        tensor = TosaTensorInfo("x", (1, 8), np.dtype(np.int8))
        return TosaGraphInfo([tensor], [tensor])

    def run(self, delegate_index, inputs, progress=None):
        return [inputs[0] + 1]


def test_a_job_runs_and_one_it_cannot_time_is_reported_as_not_timed():
    """The job's outputs are written and the IRQ rises as on the U55; a job the cycle model
    cannot time (here: no Vela compile flags) has no cycles, the job log says why, and the cycle
    counter the driver enabled stays 0 (not a made-up figure)."""
    queue, weights = bytes(range(32)), b"weights!"
    memory = bytearray(0x1000)
    memory[0x100 : 0x100 + len(queue)] = queue
    memory[0x400 : 0x400 + len(weights)] = weights
    memory[0x800:0x808] = bytes(range(8))
    record = NpuTensor((1, 1, 1, 1, 1, 8), 1, 0, 1)
    out = NpuTensor((1, 1, 1, 1, 1, 8), 1, 64, 1)
    stream = VelaStream({"weight_data": weights}, inputs=[record], outputs=[out])
    npu = VirtualU85("ethos-u85-128", executor=AddOne())  # type: ignore[arg-type]
    npu._delegates.append(Delegate(0, stream, queue, hashlib.sha256(weights).digest()))
    writes = [
        (REG["MEM_ATTR2"], 4), (REG["AXI_SRAM"], 0x2100B), (REG["QBASE0"], 0x100),
        (REG["QSIZE"], len(queue)), (REG["BASEP0"], 0x400), (REG["BASEP2"], 0x800),
        (REG["BASEP4"], 0x800), (REG["PMCR"], 0x5), (REG["PMCNTENSET"], CYCLE_BIT),
        (REG["CMD"], CMD_RUN),
    ]  # fmt: skip
    value, irq = npu.handle(FakeSession(memory), p.NpuRegs(0, tuple(writes), REG["PMCCNTR_LO"]))  # type: ignore[arg-type]
    assert npu.fault is None and irq and npu.read(REG["STATUS"]) == STATUS_END
    assert bytes(memory[0x840:0x848]) == bytes(range(1, 9))
    assert value == 0 and npu.cycle_counter == 0
    (job,) = npu.job_log
    assert job.delegate == 0 and job.cycles is None and job.counters == {}
    assert "no Vela compile flags" in (job.timing_error or "")
    assert npu.read(REG["MEM_ATTR2"]) == 4 and npu.unknown_writes == []


# ---- the firmware's driver (host build, U85 layout) against it, over the link -------------


MODELS = Path(__file__).parent / "models"


def export_u85(model: Path, outdir: Path) -> tuple[Path, list[np.ndarray]]:
    """`model` exported for ethos-u85-128 at INT8: (program path, its example inputs)."""
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    quantized = quantize(load_model(str(model)), NpuConfig.U85_128, QuantMode.INT8)
    pte = lower(quantized, outdir).program_path
    return pte, [t.numpy() for t in quantized.loaded.example_inputs]


@pytest.fixture(scope="module")
def u85_conv(tmp_path_factory):
    """The one-convolution model on ethos-u85-128: (program path, inputs)."""
    return export_u85(MODELS / "conv.py", tmp_path_factory.mktemp("u85_conv"))


@pytest.mark.slow
def test_the_driver_s_u85_layout_runs_on_the_virtual_u85(host_build, u85_conv, tmp_path):
    """host_link --npu-config ethos-u85-128: the driver checks the U85's ID/CONFIG against the
    stream's, sets the U85's AXI registers and PMU (nothing written where the U85 has no
    register), the job runs on the functional U85, and the outputs are the host reference's."""
    pte, inputs = u85_conv
    program = load_program(pte)
    with host_link(host_build, tmp_path / "link.log", "--npu-config", "ethos-u85-128") as session:
        outputs, record = run_linked(session, program, inputs)
        npu = virtual_npu_of(session)
        assert session.info is not None and session.info.npu_config == "ethos-u85-128"
        stats = session.stats()
    for got, want in zip(outputs, run_host(pte, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    assert isinstance(npu, VirtualU85) and npu.jobs == npu.interrupts == 1
    assert npu.unknown_writes == []
    # the firmware's U85 defaults (driver.h kDefaultMemAttr, kDefaultAxiSram/Ext)
    assert [npu.read(REG[f"MEM_ATTR{n}"]) for n in range(4)] == [0, 0, 4, 4]
    assert (npu.read(REG["AXI_SRAM"]), npu.read(REG["AXI_EXT"])) == (0x20F0B, 0x21F3F)
    assert npu.read(REG["PMCNTENSET"]) == CYCLE_BIT  # the driver's PMU set-up, at 0x1180
    # timed by the U85 cycle model: the driver's PMCCNTR read is the job log's figure
    (job,) = npu.job_log
    assert job.cycles and job.timing_error is None and stats.npu_cycles == job.cycles
    modelled = record.npu_modelled
    assert modelled is not None and [d.cycles for d in modelled.delegates] == [job.cycles]


@pytest.mark.slow
def test_a_u85_program_on_a_u55_host_link_is_refused_by_the_driver(host_build, u85_conv, tmp_path):
    """The virtual U55 reports a U55's CONFIG: the driver's config check refuses the U85
    stream by its product, naming both words."""
    pte, inputs = u85_conv
    refused = pytest.raises(TargetError, match=r"for NPU product 2 .*the NPU is product 0")
    with host_link(host_build, tmp_path / "link.log") as session, refused:
        run_linked(session, load_program(pte), inputs)


@pytest.mark.slow
def test_a_u85_driver_pointed_at_the_wrong_weights_fails(host_build, u85_conv, tmp_path):
    """As on the U55: a wrong region 0 is a fault the host names, never a quiet result."""
    pte, inputs = u85_conv
    options = ("--npu-config", "ethos-u85-128", "--npu-fault", "wrong_weights")
    failed = pytest.raises(TargetError, match=r"virtual U85: region 0 .* does not hold delegate")
    with host_link(host_build, tmp_path / "link.log", *options) as session, failed:
        run_linked(session, load_program(pte), inputs)


# ---- bool outputs: the U85's comparisons leave the NPU as bytes of 0 and 1 ------------------


def test_a_bool_and_a_1_byte_integer_cross_a_delegate_boundary_as_their_bytes():
    """ExecuTorch's EthosUBackend copies a Bool tensor to and from a 1-byte record as bytes;
    the host reference and the virtual NPU do the same (boundary_view)."""
    from sdk.reference.executor import boundary_view

    moved = np.array([0, 1, 0, 1], np.int8)
    as_bool = boundary_view(moved, np.dtype(np.bool_))
    assert as_bool is not None and as_bool.tolist() == [False, True, False, True]
    back = boundary_view(as_bool, np.dtype(np.int8))
    assert back is not None and back.tolist() == [0, 1, 0, 1]
    assert boundary_view(moved.astype(np.int16), np.dtype(np.bool_)) is None
    assert boundary_view(np.zeros(4, np.float32), np.dtype(np.int8)) is None


def test_bool_outputs_are_compared_by_their_bytes():
    """ExecuTorch's bool is a byte of 0 or 1; numpy would call a 0xFF byte True and equal to
    the host reference's. A target that leaves the NPU's all-ones mask in a bool is wrong (its
    CPU kernels would read a broken bool), so the comparison says so."""
    from sdk.evaluation.compare import compare_each

    reference = np.array([True, False, True])
    mask = np.array([0xFF, 0, 0xFF], np.uint8).view(np.bool_)
    assert np.array_equal(mask, reference)  # what numpy alone would say
    (different,) = compare_each([mask], [reference])
    assert not different.exact and not different.ok
    (same,) = compare_each([np.array([1, 0, 1], np.uint8).view(np.bool_)], [reference])
    assert same.exact and same.ok


@pytest.mark.slow
def test_a_bool_output_leaves_the_u85_as_bytes_of_0_and_1(host_build, tmp_path):
    """x > y, delegated whole: regor compares (CMP_GT: all ones for true) then ANDs with 1, so
    the NPU writes 0/1; the firmware takes the Bool output at the boundary (as ExecuTorch's
    backend does), and the target's bytes are the host reference's."""
    from sdk.ethosu.payload import parse_vela_stream
    from sdk.ethosu.stream.decode import decode_cmd_data

    pte, inputs = export_u85(MODELS / "compare.py", tmp_path / "export")
    program = load_program(pte)
    (delegate,) = program.plan.delegates
    stream = parse_vela_stream(program.delegate_payload(delegate))
    modes = [
        op.fields.get("elementwise_mode")
        for op in decode_cmd_data(stream.blocks["cmd_data"]).operations
    ]
    assert modes[:2] == [19, 33]  # CMP_GT, AND (registers_u85 ELEMENTWISE modes)
    with host_link(host_build, tmp_path / "link.log", "--npu-config", "ethos-u85-128") as session:
        (got,), _ = run_linked(session, program, inputs)
    (want,) = run_host(pte, inputs)
    assert got.dtype == want.dtype == np.bool_
    assert set(np.unique(got.view(np.uint8))) <= {0, 1}
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def driver_constants() -> dict[str, int]:
    """The firmware driver's register offsets and status bits (firmware/ethosu/driver.h)."""
    import re

    text = (Path(__file__).resolve().parents[2] / "firmware" / "ethosu" / "driver.h").read_text()
    found = {}
    for name, value in re.findall(r"constexpr uint32_t (\w+) = (0x[0-9A-Fa-f]+|\d+)u?;", text):
        found[name] = int(value, 0)
    for name, bit in re.findall(r"constexpr uint32_t (k\w+) = 1u << (\d+);", text):
        found[name] = 1 << int(bit)
    return found


def test_the_firmware_driver_and_the_virtual_u85_name_the_same_registers():
    """Two sides of one register map (the driver in C++, the device in Python): each offset and
    fault bit the driver writes for the U85 is where the virtual U85 has it."""
    from sdk.ethosu.device import STATUS_BRANCH_FAULT, U85

    c = driver_constants()
    for name in ("QBASE0", "QREAD", "QCONFIG", "QSIZE", "PROT", "CONFIG", "REGIONCFG",
                 "MEM_ATTR0", "AXI_SRAM", "AXI_EXT", "BASEP0"):  # fmt: skip
        assert U85.reg[name] == c[name], name
    assert U85.reg["PMCR"] == c["PMU_U85"] + c["PMU_PMCR"]
    assert U85.reg["PMCCNTR_LO"] == c["PMU_U85"] + c["PMU_PMCCNTR_LO"]
    assert c["kBranchFault"] == STATUS_BRANCH_FAULT and U85.faults & STATUS_BRANCH_FAULT
    assert not U85.faults & c["kWdFault"]  # reserved on the U85
