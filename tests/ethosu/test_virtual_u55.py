"""The firmware's unchanged Ethos-U driver against the host's virtual U55 (sdk.ethosu.device).

On `host_link` (the link server built for the host, ASan + UBSan) and on QEMU: the driver's
register accesses go over the link, the host's model fetches the command stream and the
weights by hash in place, reads the inputs at BASEP1, runs Vela's command stream, writes the
outputs and raises the interrupt; the outputs equal the host reference bit for bit. Test
variants of the NPU platform with a bug built in (a wrong base pointer, region, QSIZE, no
start) never pass: each run is an error or gives a wrong result."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sdk.errors import TargetError
from sdk.ethosu.payload import parse_vela_stream
from sdk.firmware.build import build_firmware
from sdk.firmware.buildgen import NPU_FAULTS
from sdk.program.pte import load_program
from sdk.targets.host import run_host
from sdk.targets.linked import npu_run_of, run_linked, virtual_npu_of
from sdk.targets.run import run_on_target
from tests.support.hostlink import host_link
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS

BOARD = "corstone300"
MODEL, QUANT = "shared_split", "int8"


@pytest.fixture(scope="module")
def case(export_case):
    return export_case(MODEL, QUANT, True, None)


def _inputs(case) -> list[np.ndarray]:
    return [t.numpy() for t in case.quantized.loaded.example_inputs]


def _response_bytes(log: str, kind: str) -> list[int]:
    return [int(n) for n in re.findall(rf"< {kind} response seq=\d+ session=\w+ (\d+) B", log)]


def test_the_driver_runs_on_the_virtual_u55_and_equals_the_host_reference(
    host_build, case, tmp_path
):

    program = load_program(case.result.program_path)
    inputs = _inputs(case)
    log = tmp_path / "link.log"
    with host_link(host_build, log) as session:
        outputs, record = run_linked(session, program, inputs, iterations=2)
        npu_run = npu_run_of(session, program)
        npu_cycles = session.stats().npu_cycles  # the driver's PMCCNTR reads, summed
        job_log = virtual_npu_of(session).job_log
    for got, want in zip(outputs, run_host(case.result.program_path, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    delegates = len(program.plan.delegates)
    assert npu_run is not None and npu_run.driver == "firmware"
    assert npu_run.executor == "command-stream"
    assert npu_run.jobs == npu_run.interrupts == 2 * delegates
    assert npu_run.register_accesses > 20 * npu_run.jobs
    # The driver read the modelled cycles from PMCCNTR (summed over the run or the session).
    cycles = [job.cycles for job in job_log]
    assert len(cycles) == npu_run.jobs and all(c for c in cycles)
    assert npu_cycles in (sum(cycles), sum(cycles[len(cycles) // 2 :]))
    # The run's record: per delegate and inference the job log's mean, the firmware's total
    # (STATS) backed by the jobs since the LOAD.
    modelled = record.npu_modelled
    assert modelled is not None and modelled.agrees and modelled.firmware_total == npu_cycles
    per_delegate = {d.delegate: d.cycles for d in modelled.delegates}
    for index in per_delegate:
        jobs = [job.cycles for job in job_log if job.delegate == index]
        assert per_delegate[index] == sum(jobs) / 2
    assert modelled.cycles == sum(per_delegate.values())
    # Link traffic: the command stream and the weights are hashed in place, never read; the
    # only bytes read are the delegates' inputs, once per job.
    text = log.read_text()
    assert len(_response_bytes(text, "NPU_HASH")) == 2 * npu_run.jobs
    input_bytes = sum(
        r.nbytes
        for d in program.plan.delegates
        for r in parse_vela_stream(program.delegate_payload(d)).inputs
    )
    assert sum(_response_bytes(text, "NPU_READ")) == 2 * input_bytes


@pytest.mark.parametrize("fault", NPU_FAULTS)
def test_a_faulty_npu_platform_never_passes_on_host_link(host_build, case, tmp_path, fault):
    program = load_program(case.result.program_path)
    inputs = _inputs(case)
    with host_link(host_build, tmp_path / "link.log", "--npu-fault", fault) as session:
        try:
            outputs, _ = run_linked(session, program, inputs)
        except TargetError as error:
            assert "EthosUBackend" in error.message
            if fault == "no_start":  # the host says what the driver did not do
                assert "never started the NPU" in error.message, error.message
            if fault == "wrong_weights":  # never a quiet wrong result
                assert "does not hold delegate" in error.message, error.message
            return
    assert fault != "wrong_weights", "the virtual U55 ran from the wrong weights"
    reference = run_host(case.result.program_path, inputs)
    assert any(not np.array_equal(a, b) for a, b in zip(outputs, reference, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("fault", NPU_FAULTS)
def test_a_faulty_npu_platform_never_passes_on_qemu(case, tmp_path, fault):
    pte = case.result.program_path
    elf = build_firmware(BOARD, pte, tmp_path / f"{fault}.elf", test_hook=f"npu_{fault}")
    inputs = _inputs(case)
    try:
        report = run_on_target("qemu", BOARD, pte, inputs, 300, tmp_path, firmware=elf)
    except TargetError as error:
        assert "EthosUBackend" in error.message
        return
    reference = run_host(pte, inputs)
    assert any(not np.array_equal(a, b) for a, b in zip(report.outputs, reference, strict=True))
