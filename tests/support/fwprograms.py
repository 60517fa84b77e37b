"""Test programs for the firmware tests, and ExecuTorch's runtime as the oracle.

Besides exports, programs export never makes (the hostile ones a review found): written from
ExecuTorch's schema as JSON by Debian's flatc, the build's, or, where flatbuffers' sharing of
tables is the point, with the flatbuffers builder.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from tests.support.etprograms import export_cpu, oracle, random_inputs  # noqa: F401 (re-exported)

FLATC = "/usr/bin/flatc"  # SConstruct's default: the flatc matching Debian's headers


def export_ethos_u(module, example_inputs, path: Path) -> Path:
    """Fully delegated to the Ethos-U55-128, with int8 inputs/outputs (no CPU operator)."""
    import torch
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = EthosUCompileSpec("ethos-u55-128")
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config())
    graph = torch.export.export(module, example_inputs).module(check_guards=False)
    prepared = prepare_pt2e(graph, quantizer)
    prepared(*example_inputs)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(
        torch.export.export(converted, example_inputs), partitioner=[EthosUPartitioner(spec)]
    )
    edge = edge.transform([QuantizeInputs(edge, [0]), QuantizeOutputs(edge, [0])])
    path.write_bytes(edge.to_executorch().buffer)
    return path


def make_modules():
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized ops)
    import torch
    from torch import nn

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class Add(nn.Module):
        def forward(self, x, y):
            return x + y

    class QuantMix(nn.Module):
        """Elementwise and copy operators only: results must match bit for bit."""

        def forward(self, x, y):
            q = torch.ops.quantized_decomposed.quantize_per_tensor(
                x, 0.01, 3, -32768, 32767, torch.int16
            )
            d = torch.ops.quantized_decomposed.dequantize_per_tensor(
                q, 0.01, 3, -32768, 32767, torch.int16
            )
            z = d * y + x
            return torch.cat([z.permute(0, 2, 1), y.permute(0, 2, 1)], dim=1), q

    class BmmSum(nn.Module):
        def forward(self, x, y):
            return torch.bmm(x, y) + 1.5, x.sum(dim=[1])

    class Cumsum(nn.Module):  # an operator no kernel implements
        def forward(self, x):
            return torch.cumsum(x, dim=0)

    class Relu(nn.Module):
        def forward(self, x):
            return torch.relu(x + x)

    return {
        "id": (Identity(), (torch.randn(2, 3),)),
        "add": (Add(), (torch.randn(2, 3), torch.randn(2, 3))),
        "quant_mix": (QuantMix(), (torch.randn(2, 8, 16), torch.randn(2, 8, 16))),
        "bmm": (BmmSum(), (torch.randn(2, 3, 4), torch.randn(2, 4, 5))),
        "cumsum": (Cumsum(), (torch.randn(8),)),
        "delegate": (Relu(), (torch.randn(1, 16),)),
    }


def schema_dir() -> Path:
    import executorch

    return Path(next(iter(executorch.__path__))) / "schema"


def program_from_json(program: dict) -> bytes:
    """The .pte that flatc makes of `program` (ExecuTorch's Program table as JSON)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "program.json"
        source.write_text(json.dumps(program))
        subprocess.run(
            [FLATC, "--binary", "-o", tmp, str(schema_dir() / "program.fbs"), str(source)],
            check=True,
            capture_output=True,
        )
        return (Path(tmp) / "program.pte").read_bytes()


def method(values: list, *, inputs=(), outputs=(), instructions=(), operators=(), buffers=(0,)):
    """A Program with one method "forward" (JSON), for program_from_json."""
    return {
        "version": 0,
        "execution_plan": [
            {
                "name": "forward",
                "values": values,
                "inputs": list(inputs),
                "outputs": list(outputs),
                "chains": [{"instructions": list(instructions)}],
                "operators": list(operators),
                "non_const_buffer_sizes": list(buffers),
            }
        ],
    }


def planned_tensor(scalar_type: str, sizes: list[int], offset: int = 0) -> dict:
    return {
        "val_type": "Tensor",
        "val": {
            "scalar_type": scalar_type,
            "sizes": sizes,
            "dim_order": list(range(len(sizes))),
            "allocation_info": {"memory_id": 1, "memory_offset_low": offset},
        },
    }


def shared_int_list_program(items: int, references: int) -> bytes:
    """values = [Int 0, then one IntList table of `items` zeros referred to `references`
    times]: flatbuffers lets many offsets point at one table, so the items of all values add
    up to far more than the program holds. Built with the flatbuffers builder by slot number
    (field order in ExecuTorch's program.fbs); ExecuTorch's own deserializer would expand every
    reference."""
    import flatbuffers

    kernel_types_int, kernel_types_int_list = 2, 7  # union KernelTypes { Null, Int, ... }
    b = flatbuffers.Builder(8 * items + 4 * references + 1024)

    def evalue(val_type: int, table: int) -> int:
        b.StartObject(2)  # EValue { val: KernelTypes } = val_type (slot 0), val (slot 1)
        b.PrependUint8Slot(0, val_type, 0)
        b.PrependUOffsetTRelativeSlot(1, table, 0)
        return b.EndObject()

    b.StartVector(8, items, 8)
    for _ in range(items):
        b.PrependInt64(0)  # value 0: the Int below
    item_vector = b.EndVector()
    b.StartObject(1)  # IntList { items }
    b.PrependUOffsetTRelativeSlot(0, item_vector, 0)
    int_list = evalue(kernel_types_int_list, b.EndObject())
    b.StartObject(1)  # Int { int_val }
    b.PrependInt64Slot(0, 0, 0)
    int_value = evalue(kernel_types_int, b.EndObject())
    b.StartVector(4, references + 1, 4)
    for _ in range(references):
        b.PrependUOffsetTRelative(int_list)  # the same table, again and again
    b.PrependUOffsetTRelative(int_value)
    values = b.EndVector()
    b.StartVector(8, 1, 8)
    b.PrependInt64(0)
    buffer_sizes = b.EndVector()
    name = b.CreateString("forward")
    # ExecutionPlan: name 0, container_meta_type 1, values 2, ..., non_const_buffer_sizes 8.
    b.StartObject(9)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUOffsetTRelativeSlot(2, values, 0)
    b.PrependUOffsetTRelativeSlot(8, buffer_sizes, 0)
    plan = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(plan)
    plans = b.EndVector()
    b.StartObject(2)  # Program: version 0, execution_plan 1
    b.PrependUint32Slot(0, 0, 0)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    return bytes(b.Output())
