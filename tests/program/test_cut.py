"""Cutting a program at its delegate calls: each CPU segment carries only the operators its own
instructions call (so its firmware build needs only their kernels), and calls the same
operators as the original instructions did."""

from __future__ import annotations

from executorch.exir.schema import KernelCall

from sdk.program.cut import cpu_segments
from sdk.program.pte import load_program, operator_name
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS


def test_cut_segments_carry_only_the_operators_they_call(export_case):
    # int8 with bmm kept on the CPU: several CPU segments with different operators.
    case = export_case("shared_split", "int8", True, ["aten.bmm"])
    program = load_program(case.result.program_path)
    original = program.plan.chains[0].instructions
    table = program.operators()
    indices = [getattr(i.instr_args, "op_index", None) for i in original]
    segments = cpu_segments(program)
    assert len(segments) >= 3
    smaller = 0
    for segment in segments:
        cut = load_program(segment.pte)
        calls = [i.instr_args for i in cut.plan.chains[0].instructions]
        assert all(isinstance(c, KernelCall) for c in calls)
        # The same operator per call as the original instruction, in order.
        expected = [table[original[i].instr_args.op_index] for i in segment.step.instructions]
        assert [operator_name(cut.plan.operators[c.op_index]) for c in calls] == expected
        # The table is exactly the operators called, each once, in the original table's order.
        assert cut.operators() == [op for op in table if op in set(expected)]
        smaller += len(cut.operators()) < len(table)
    assert smaller > 0, "every segment calls every operator: the test shows nothing"
    # The loaded program is left as it was (the host reference keeps running it).
    assert program.operators() == table
    assert [getattr(i.instr_args, "op_index", None) for i in original] == indices


def test_a_view_between_delegates_reads_its_source(export_case):
    """A reshape forced to the CPU between two delegates: no instruction writes the view. The
    cut takes no input for a view of bytes it writes itself, and the host reference reads the
    view through its source's bytes; the result equals the quantized model's."""
    from pathlib import Path

    import numpy as np

    from sdk.export.model_loader import load_model
    from sdk.program.pte import output_quant_scales
    from sdk.targets.host import run_host

    model = Path(__file__).parent / "models" / "view_between_delegates.py"
    case = export_case(str(model), "int8", True, ["aten.view_copy.default"])
    program = load_program(case.result.program_path)
    written = set(program.plan.inputs)
    for segment in cpu_segments(program):
        written |= set(segment.outputs)
    for _, call in program.delegate_calls():
        written |= {int(a) for a in call.args}
    views = [
        v
        for v in range(len(program.plan.values))
        if program.is_tensor(v) and program.storage(v) is not None and v not in written
    ]
    assert views, "the model should hold a view no step writes"
    (x,) = load_model(str(model)).example_inputs
    (host,) = run_host(case.result.program_path, [x.numpy()])
    expected = case.quantized.graph_module(x)
    expected = (expected[0] if isinstance(expected, (tuple, list)) else expected).detach().numpy()
    scale = output_quant_scales(program)[0]
    assert host.shape == expected.shape
    assert np.abs(host - expected).max() <= scale * 1.001  # INT8: at most 1 LSB


def test_an_index_list_is_read_by_the_segment(tmp_path):
    """index.Tensor takes its indices in a `Tensor?[]`: the cut must make them inputs of the
    segment (they were left out: the host reference indexed with zeros, and called a correct
    device wrong)."""
    import numpy as np
    import torch
    from executorch.exir import to_edge
    from executorch.runtime import Runtime

    from sdk.targets.host import run_host

    class IndexColumns(torch.nn.Module):
        def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
            return x[:, i]

    x, i = torch.arange(12, dtype=torch.int32).reshape(3, 4), torch.tensor([3, 1, 2, 3])
    pte = tmp_path / "index.pte"
    exported = torch.export.export(IndexColumns(), (x, i))
    pte.write_bytes(to_edge(exported).to_executorch().buffer)
    [got] = run_host(pte, [x.numpy(), i.numpy()])
    method = Runtime.get().load_program(pte).load_method("forward")
    [want] = method.execute([x, i])
    np.testing.assert_array_equal(got, want.numpy())
    np.testing.assert_array_equal(got, x[:, i].numpy())
