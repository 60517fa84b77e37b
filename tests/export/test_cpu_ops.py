"""`--cpu-op` names are checked against the lowered graph's operators."""

from __future__ import annotations

import pytest
import torch

from sdk.errors import UsageError
from sdk.export.cpu_ops import ForceOnCpu


def edge_graph(*ops) -> torch.fx.GraphModule:
    """A graph calling these edge-dialect operators, as the partitioner sees them."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    for op in ops:
        x = graph.call_function(op, (x,))
    graph.output(x)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


@pytest.fixture(scope="module")
def graph():
    from executorch.exir.dialects._ops import ops as exir_ops

    edge = exir_ops.edge.aten
    return edge_graph(edge.max_pool2d_with_indices.default, edge.bmm.default)


@pytest.mark.parametrize("name", ["aten.bmm", "aten.bmm.default", "aten::bmm"])
def test_names_that_match(graph, name):
    ForceOnCpu([name]).check_matches([graph])


def test_a_packet_of_another_op_names_the_one_meant(graph):
    """The issue's case: max_pool2d when the graph has max_pool2d_with_indices."""
    with pytest.raises(UsageError) as info:
        ForceOnCpu(["aten.max_pool2d", "aten.bmm"]).check_matches([graph])
    message = info.value.message
    assert message.startswith("--cpu-op aten.max_pool2d matches no operator of the graph")
    assert "closest: aten.max_pool2d_with_indices.default" in message
    assert "aten.bmm matches" not in message


def test_an_operator_inside_a_delegate_counts_as_matched(graph):
    cpu_only = edge_graph()
    ForceOnCpu(["aten.bmm"]).check_matches([cpu_only, graph])
    with pytest.raises(UsageError, match=r"aten\.bmm matches no operator"):
        ForceOnCpu(["aten.bmm"]).check_matches([cpu_only])


@pytest.mark.slow
def test_an_op_with_no_out_variant_forced_to_the_cpu_says_so(tmp_path):
    """`--cpu-op aten.pad.default` (what F.pad is): ExecuTorch has no CPU form of it. One
    line naming the op and the ways forward, not "lowering for the NPU failed"."""
    from pathlib import Path

    from sdk.errors import ExportError
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    model = Path(__file__).parent / "models" / "pad_between_convs.py"
    quantized = quantize(load_model(str(model)), NpuConfig.U55_128, QuantMode.INT8)
    with pytest.raises(ExportError) as caught:
        lower(quantized, tmp_path / "out", cpu_ops=["aten.pad.default"])
    message = caught.value.message
    assert message.startswith("the program's CPU part calls aten::pad, which ExecuTorch has no")
    assert "drop its --cpu-op" in message and "torch.constant_pad_nd" in message
    assert "lowering for the NPU" not in message
