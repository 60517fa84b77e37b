"""Session exports for the NPU tests.

The decoder's regression set (npu_cases.CASES: tiny models and the examples, INT8 and INT16),
exported once per session: each delegate's cmd_data and Vela's own listing of the same stream.

The building blocks' single-operation exports (models/*.py, `delegate`): a test gets its
delegate's Vela payload, the register values at each NPU operation (cmdscan, independent of
sdk.ethosu.stream's decoder) and the saved TOSA graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from sdk.program.audit import read_delegates
from sdk.program.pte import load_program
from tests.support.cmdscan import Op, scan
from tests.support.npu_cases import DelegateStream, export_key
from tests.support.tosagraph import Graph
from tests.support.vela_oracle import vela_compile

MODELS = Path(__file__).parent / "models"


@dataclass
class Delegate:
    weights: bytes  # region 0: the weight_data block
    ops: list[Op]
    tosa: Graph
    inputs: list  # sdk.ethosu.payload.NpuTensor
    outputs: list
    tosa_bytes: bytes

    def of(self, *names: str) -> list[Op]:
        return [op for op in self.ops if op.name in names]

    def dma_source(self, op: Op, base: int, region: int) -> int:
        """Where in region 0 the bytes at `base` of `region` came from: in place for region 0,
        else through the latest DMA before `op` that filled that address."""
        if region == 0:
            return base
        dmas = [
            dma
            for dma in self.of("DMA_START")
            if dma.offset < op.offset
            and dma.regs["DMA0_SRC_REGION"] == 0
            and dma.regs["DMA0_DST"] <= base < dma.regs["DMA0_DST"] + dma.regs["DMA0_LEN"]
        ]
        assert dmas, f"address {base:#x} of region {region} with no DMA filling it"
        return base + dmas[-1].regs["DMA0_SRC"] - dmas[-1].regs["DMA0_DST"]

    def stream(self, op: Op, what: str) -> bytes:
        """The WEIGHT or SCALE stream an operation reads."""
        base = self.dma_source(op, op.regs[f"{what}_BASE"], op.regs[f"{what}_REGION"])
        data = self.weights[base : base + op.regs[f"{what}_LENGTH"]]
        assert len(data) == op.regs[f"{what}_LENGTH"]
        return data

    def reference(self, feeds: list) -> list:
        """The TOSA reference model on the delegate's saved TOSA."""
        import tosa_reference_model as ref

        from sdk.reference.executor import native_output_captured

        with native_output_captured():
            outputs, status = ref.run(self.tosa_bytes, feeds)
        assert status == ref.GraphStatus.TOSA_VALID, status
        return list(outputs)


@pytest.fixture(scope="session")
def delegate(export_case):
    """delegate(model, quant) -> Delegate: the first delegate of models/<model>.py's export."""
    from sdk.ethosu.payload import parse_vela_stream
    from sdk.program.pte import load_program

    cache: dict[tuple[str, str], Delegate] = {}

    def get(model: str, quant: str = "int8") -> Delegate:
        if (model, quant) not in cache:
            case = export_case(str(MODELS / f"{model}.py"), quant, True, None)
            program = load_program(case.result.program_path)
            first = program.plan.delegates[0]
            vela = parse_vela_stream(bytes(program.delegate_payload(first)))
            tosa_path = case.result.outdir / "tosa" / "delegate_0.tosa"
            cache[(model, quant)] = Delegate(
                vela.blocks["weight_data"],
                scan(vela.blocks["cmd_data"]),
                Graph(tosa_path),
                vela.inputs,
                vela.outputs,
                tosa_path.read_bytes(),
            )
        return cache[(model, quant)]

    return get


@pytest.fixture(scope="session")
def npu_program(export_case):
    """npu_program(model, quant) -> the exported model.pte of a case (npu_cases.CASES)."""

    def get(model: str, quant: str) -> Path:
        return export_case(*export_key(model, quant)).result.program_path

    return get


@pytest.fixture(scope="session")
def delegate_streams(npu_program, tmp_path_factory):
    """delegate_streams(model, quant) -> [DelegateStream] for every Ethos-U delegate."""
    cache: dict[tuple[str, str], list[DelegateStream]] = {}

    def get(model: str, quant: str) -> list[DelegateStream]:
        if (model, quant) not in cache:
            program_path = npu_program(model, quant)
            streams = []
            for info in read_delegates(load_program(program_path)):
                assert info.vela is not None, info.vela_error
                tosa = program_path.parent / "tosa" / f"delegate_{info.index}.tosa"
                flags = info.compile_specs["compile_flags"].split()
                outdir = tmp_path_factory.mktemp(f"vela_{model}_{quant}_{info.index}")
                streams.append(
                    DelegateStream(
                        f"{model}/{quant}/delegate_{info.index}",
                        info.index,
                        info.vela.blocks["cmd_data"],
                        vela_compile(tosa, flags, outdir),
                    )
                )
            cache[(model, quant)] = streams
        return cache[(model, quant)]

    return get
