"""Checks of an `--io int` program against its `--io float` twin (the export's and the
deploy's tests)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sdk.program.integer_io import IoSection
from sdk.program.pte import load_program

QDQ = ("quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor")


def boundary_qdq(program) -> list[str]:
    """Quantize/dequantize calls that read a program input or write a program output."""
    plan = program.plan
    ins, outs = set(plan.inputs), set(plan.outputs)
    found = []
    for _, call in program.kernel_calls():
        name = plan.operators[call.op_index].name
        if name in QDQ and (int(call.args[0]) in ins or int(call.args[-1]) in outs):
            found.append(name)
    return found


def check_int_io_program(float_program: Path, int_program: Path, dtype: str) -> None:
    """The --io int program beside its --io float twin (each with the export's report.json
    and example_inputs.npz beside it): no Q/DQ at its edges, integers of `dtype` in and out
    with their figures, and the host reference's dequantized outputs are the float program's."""
    from sdk.targets.host import run_host
    from sdk.utils.npz import read_arrays

    reports = {
        p: json.loads((p.parent / "report.json").read_text()) for p in (float_program, int_program)
    }
    assert boundary_qdq(load_program(float_program))  # the float program has them
    program = load_program(int_program)
    assert boundary_qdq(program) == []
    assert reports[int_program]["boundary_audit"]["ok"]
    io = IoSection.from_json(reports[int_program]["io"])
    assert io.mode == "int" and reports[float_program]["io"]["mode"] == "float"
    for q, t in zip([*io.inputs, *io.outputs], [*program.inputs(), *program.outputs()]):
        assert q is not None and q.dtype == dtype and q.scale > 0
        assert t.dtype == {"int8": "Char", "int16": "Short"}[dtype]
    # the host reference runs it: its dequantized outputs are the float program's
    x = read_arrays(int_program.parent / "example_inputs.npz")
    assert [a.dtype for a in x] == [np.dtype(dtype)] * len(x)
    got = io.dequantize_outputs(run_host(program, x))
    want = run_host(
        load_program(float_program), read_arrays(float_program.parent / "example_inputs.npz")
    )
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= 1.01 * max(q.scale for q in io.outputs)


def compiled_io_header(header: Path, tmp_path: Path) -> dict:
    """program_io.h compiled by the host's C compiler into a program that prints what it
    says of input 0 and output 0 (as a firmware would read it) as JSON."""
    import subprocess

    fields = []
    for kind in ("INPUT0", "OUTPUT0"):
        fields += [
            f'printf("\\"{kind}\\": {{\\"scale\\": %.9g, \\"zero_point\\": %d, ", '
            f"(double)PROGRAM_{kind}_SCALE, (int)PROGRAM_{kind}_ZERO_POINT);",
            f"{{ int shape[] = PROGRAM_{kind}_SHAPE; int order[] = PROGRAM_{kind}_DIM_ORDER;",
            'printf("\\"shape\\": [");',
            f'for (int i = 0; i < PROGRAM_{kind}_RANK; i++) printf(i ? ", %d" : "%d", shape[i]);',
            'printf("], \\"dim_order\\": [");',
            f'for (int i = 0; i < PROGRAM_{kind}_RANK; i++) printf(i ? ", %d" : "%d", order[i]);',
            f'printf("], \\"itemsize\\": %d, \\"bytes\\": %d}}", '
            f"(int)sizeof(program_{kind.lower()}_t), (int)PROGRAM_{kind}_BYTES); }}",
            'printf("%s", ' + ('", "' if kind == "INPUT0" else '""') + ");",
        ]
    source = tmp_path / "read_io.c"
    source.write_text(
        f'#include <stdio.h>\n#include "{header}"\nint main(void) {{\n'
        + 'printf("{");\n'
        + "\n".join(fields)
        + '\nprintf("}");\nreturn 0;\n}\n'
    )
    binary = tmp_path / "read_io"
    subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Werror", str(source), "-o", str(binary)], check=True
    )
    return json.loads(subprocess.run([str(binary)], capture_output=True, text=True).stdout)
