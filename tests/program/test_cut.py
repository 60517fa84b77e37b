"""Cutting a program at its delegate calls: each CPU segment carries only the operators its own
instructions call (so its firmware build needs only their kernels), and calls the same
operators as the original instructions did."""

from __future__ import annotations

from executorch.exir.schema import KernelCall

from sdk.program.cut import cpu_segments
from sdk.program.pte import load_program, operator_name


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
