"""The boundary rules of NpuPartitioner on small, hand-tagged edge graphs.

Each graph is a real torch.export -> to_edge graph using the quantized_decomposed ops; the
test tags a partition by hand (as the stock capability partitioner might) and checks what the
fix-up leaves: every tensor crossing a final partition is an integer, multi-output producers
stay with their getitems, cyclic leftovers are split, compute-free leftovers are dropped.
"""

from __future__ import annotations

import operator

import pytest
import torch
from executorch.backends.arm.constants import DQ_OPS
from executorch.backends.arm.ethosu import EthosUCompileSpec
from executorch.exir import to_edge
from torch import nn

from sdk.export.partitioner import TAG, NpuPartitioner, _constant_nodes, is_float

qd = torch.ops.quantized_decomposed
I16 = (-32767, 32767, torch.int16)
I8 = (-127, 127, torch.int8)


def edge_program(module: nn.Module, *inputs: torch.Tensor):
    return to_edge(torch.export.export(module, inputs)).exported_program()


def tag_all(program, skip=()) -> None:
    """Put every call_function node (except the nodes named in `skip`) into partition tag0."""
    for node in program.graph.nodes:
        if node.op == "call_function" and node.name not in skip:
            node.meta[TAG] = "tag0"


def fix(program) -> tuple[NpuPartitioner, dict[str, set[str]]]:
    partitioner = NpuPartitioner(EthosUCompileSpec("ethos-u55-128"))
    tags = partitioner._keep_boundaries_integer(
        program.graph_module, {"tag0"}, _constant_nodes(program)
    )
    members: dict[str, set[str]] = {t: set() for t in tags}
    for node in program.graph.nodes:
        if node.meta.get(TAG) in members:
            members[node.meta[TAG]].add(node.name)
    return partitioner, members


def crossing_tensors_are_integer(program, tags) -> None:
    constants = _constant_nodes(program)
    for tag in tags:
        nodes = {n for n in program.graph.nodes if n.meta.get(TAG) == tag}
        for node in nodes:
            for source in node.all_input_nodes:
                if source in nodes or source in constants:
                    continue
                if node.target in DQ_OPS and source is not node.args[0]:
                    continue  # a DQ's scale/zero-point
                assert not is_float(source), f"{tag}: float input {source.name} -> {node.name}"
            if any(u not in nodes for u in node.users) and node.target is not operator.getitem:
                assert not is_float(node), f"{tag}: float output {node.name}"


class SharedSplitTail(nn.Module):
    """int16 in -> DQ -> add -> Q -> DQ -> split; one half re-quantized for a mul, the other
    half leaves as float: the stock bug's shape, compressed."""

    def forward(self, xq):
        a = qd.dequantize_per_tensor(xq, 0.01, 0, *I16)
        b = qd.quantize_per_tensor(a + a, 0.02, 0, *I16)
        c = qd.dequantize_per_tensor(b, 0.02, 0, *I16)
        g0, g1 = c.split([2, 2], dim=1)
        d = qd.quantize_per_tensor(g0, 0.02, 0, *I16)
        e = qd.dequantize_per_tensor(d, 0.02, 0, *I16)
        f = qd.quantize_per_tensor(e * e, 0.04, 0, *I16)
        return f, g1


def test_float_split_output_takes_out_the_split_its_getitems_and_the_dq():
    program = edge_program(SharedSplitTail(), torch.zeros(1, 4, 3, dtype=torch.int16))
    tag_all(program)
    partitioner, members = fix(program)
    removed = {r.node for r in partitioner.removals}
    assert {"aten_split_with_sizes_copy_default", "getitem", "getitem_1"} <= removed
    assert "quantized_decomposed_dequantize_per_tensor_default_1" in removed  # cascaded
    assert "quantized_decomposed_quantize_per_tensor_default_1" in removed  # Q of outside float
    # Taking the split out left {add ...} -> CPU -> {mul ...}: a cycle, so two partitions.
    assert len(members) == 2
    assert any("aten_add_tensor" in m for m in members.values())
    assert any("aten_mul_tensor" in m for m in members.values())
    crossing_tensors_are_integer(program, members)
    reasons = {r.node: r.reason for r in partitioner.removals}
    assert "getitem_1" in reasons["getitem"] or "float output" in reasons["getitem"]


class TensorVariantsAndPerChannel(nn.Module):
    """`.tensor` Q/DQ with constant scale/zero-point and a per-channel weight DQ."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.randint(-127, 127, (4, 4), dtype=torch.int8))
        self.register_buffer("w_scale", torch.rand(4) + 0.1)
        self.register_buffer("w_zp", torch.zeros(4, dtype=torch.int64))
        self.register_buffer("scale", torch.tensor(0.05))
        self.register_buffer("zp", torch.tensor(0))

    def forward(self, x):
        q = qd.quantize_per_tensor.tensor(x, self.scale, self.zp, *I16)
        dq = qd.dequantize_per_tensor.tensor(q, self.scale, self.zp, *I16)
        w = qd.dequantize_per_channel(self.w, self.w_scale, self.w_zp, 0, *I8)
        return qd.quantize_per_tensor.tensor(dq @ w, self.scale, self.zp, *I16)


@pytest.mark.parametrize("skip_input_q", [False, True])
def test_tensor_and_per_channel_variants(skip_input_q):
    program = edge_program(TensorVariantsAndPerChannel(), torch.randn(2, 4))
    input_q = "quantized_decomposed_quantize_per_tensor_tensor"
    tag_all(program, skip=(input_q,) if skip_input_q else ())
    partitioner, members = fix(program)
    removed = {r.node for r in partitioner.removals}
    # The input Q takes a float from outside: it leaves. Constant scales and the per-channel
    # DQ's float scale tensor are not boundary inputs, so nothing else moves.
    assert (input_q in removed) != skip_input_q
    assert not any("per_channel" in n or "mm" in n for n in removed)
    assert len(members) == 1
    (nodes,) = members.values()
    assert (
        "aten_mm_default" in nodes
        and "quantized_decomposed_dequantize_per_channel_default" in nodes
    )
    crossing_tensors_are_integer(program, members)


class Int8FloatOutput(nn.Module):
    def forward(self, xq):
        a = qd.dequantize_per_tensor(xq, 0.1, 0, *I8)
        return torch.relu(a), qd.quantize_per_tensor(a * 2, 0.1, 0, *I8)


def test_int8_float_output_is_moved_out_with_its_dq_chain():
    program = edge_program(Int8FloatOutput(), torch.zeros(2, 3, dtype=torch.int8))
    tag_all(program)
    partitioner, members = fix(program)
    removed = {r.node for r in partitioner.removals}
    assert "aten_relu_default" in removed
    crossing_tensors_are_integer(program, members)


class OnlyDataMovement(nn.Module):
    def forward(self, xq):
        a = qd.dequantize_per_tensor(xq, 0.1, 0, *I8)
        return a.split([1, 1], dim=0)


def test_partition_left_without_compute_is_dropped():
    program = edge_program(OnlyDataMovement(), torch.zeros(2, 3, dtype=torch.int8))
    tag_all(program)
    partitioner, members = fix(program)
    assert members == {}
    assert all(n.meta.get(TAG) is None for n in program.graph.nodes)
    assert partitioner.removals  # and each removal is recorded with a reason
    assert all(r.reason for r in partitioner.removals)


class AlreadyClean(nn.Module):
    def forward(self, xq):
        a = qd.dequantize_per_tensor(xq, 0.1, 0, *I8)
        return qd.quantize_per_tensor(a + a, 0.2, 0, *I8)


def test_a_clean_partition_is_left_alone():
    program = edge_program(AlreadyClean(), torch.zeros(2, 3, dtype=torch.int8))
    tag_all(program)
    partitioner, members = fix(program)
    assert partitioner.removals == []
    assert len(members) == 1
