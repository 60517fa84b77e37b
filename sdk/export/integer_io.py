"""`--io int`: take the quantize at each float input and the dequantize at each float output
out of the edge program (ExecuTorch's quantize_io_pass), so the program takes and returns the
quantized integers and the CPU no longer converts them on every inference.

Every float input must go straight into one quantize and every float output come straight out
of a dequantize; anything else (a float computed on the CPU) fails the export in one line, since
the program would still take or return floats there.
"""

from __future__ import annotations

import torch

from sdk.errors import ExportError
from sdk.program.integer_io import IoQuant, IoSection


def _quant(args: tuple) -> IoQuant:
    """(scale, zero_point, qmin, qmax, dtype): a quantize/dequantize's arguments after its input."""
    scale, zero_point, qmin, qmax, dtype = args[:5]
    name = str(dtype).removeprefix("torch.")  # torch.int8 -> numpy's "int8"
    return IoQuant(name, float(scale), int(zero_point), int(qmin), int(qmax))


def _is_float(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def integer_io(edge, io: str) -> IoSection:
    """With io "int", rewrite `edge` (an EdgeProgramManager after lowering) in place to take and
    return integers; the section records each input's and output's quantization. With "float",
    the program stays as it is (every entry None)."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.passes.quantize_io_pass import quantize_input, quantize_output

    program = edge.exported_program()
    graph = program.graph_module.graph
    names = program.graph_signature.user_inputs
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    output_nodes = list(graph.output_node().args[0])
    if io == "float":
        return IoSection("float", (None,) * len(names), (None,) * len(output_nodes))
    quantize_op = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
    dequantize_op = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default
    inputs: list[IoQuant | None] = []
    for index, name in enumerate(names):
        node = placeholders.get(name)
        if node is None or not _is_float(node):
            inputs.append(None)  # an index tensor, a bool mask: the program takes it as it is
            continue
        users = list(node.users)
        if len(users) != 1 or users[0].target != quantize_op:
            found = ", ".join(str(u.target) for u in users) or "nothing"
            raise ExportError(
                f"--io int: input {index} ({name}) is read in float by {found}, not by one "
                "quantize: this program cannot take it as integers (use --io float)"
            )
        inputs.append(_quant(tuple(quantize_input(program, index))))
    outputs: list[IoQuant | None] = []
    for index, node in enumerate(output_nodes):
        if not isinstance(node, torch.fx.Node) or not _is_float(node):
            outputs.append(None)
            continue
        if node.target != dequantize_op:
            raise ExportError(
                f"--io int: output {index} ({node.name}) is a float made by {node.target} on the "
                "CPU, not by a dequantize: this program cannot return it as integers "
                "(use --io float)"
            )
        outputs.append(_quant(tuple(quantize_output(program, index))))
    graph.eliminate_dead_code()
    program.graph_module.recompile()
    return IoSection("int", tuple(inputs), tuple(outputs))
