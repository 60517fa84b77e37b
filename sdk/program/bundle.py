"""ExecuTorch's BundledProgram (`.bpte`): a program with test cases (inputs and the outputs
expected of them), as ExecuTorch's Arm flow writes with `--bundleio`.

    write_bundle(Path("out/model.pte"), [(inputs, expected)], Path("out/model.bpte"))
    program, cases = read_bundle(Path("out/model.bpte"))

Written and read with ExecuTorch's own `executorch.devtools.bundled_program` (the schema ships
in the wheel), so its tools read ours. `sdk export --bundle` bundles the example inputs with
the host reference's outputs on them (what the program must give); `sdk run X.bpte` runs every
case and compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdk.errors import ProgramError, UsageError
from sdk.utils.dtypes import DTYPES

METHOD = "forward"


@dataclass(frozen=True)
class BundleCase:
    inputs: list[np.ndarray]
    expected: list[np.ndarray]


def write_bundle(pte: Path, cases: list[BundleCase], out: Path) -> Path:
    import torch
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.core import BundledProgram
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    suite = MethodTestSuite(
        method_name=METHOD,
        test_cases=[
            MethodTestCase(
                inputs=[torch.from_numpy(np.ascontiguousarray(x)) for x in case.inputs],
                expected_outputs=[torch.from_numpy(np.ascontiguousarray(y)) for y in case.expected],
            )
            for case in cases
        ],
    )
    bundle = BundledProgram(None, [suite], pte_file_path=str(pte))
    out.write_bytes(serialize_from_bundled_program_to_flatbuffer(bundle))
    return out


def _array(value, where: str) -> np.ndarray:
    tensor = getattr(value.val, "scalar_type", None)
    if tensor is None:
        raise ProgramError(f"{where}: not a tensor (the SDK's bundles hold tensors only)")
    entry = DTYPES.get(value.val.scalar_type)
    if entry is None or entry.numpy is None:
        raise ProgramError(f"{where}: dtype {value.val.scalar_type} has no numpy equivalent")
    try:
        data = np.frombuffer(bytes(value.val.data), dtype=entry.numpy)
        return data.reshape(tuple(value.val.sizes)).copy()
    except ValueError as exc:  # data that does not make its sizes
        raise ProgramError(f"{where}: {exc}") from None


def read_bundle(path: Path) -> tuple[bytes, list[BundleCase]]:
    """The program's bytes and the `forward` method's test cases."""
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such bundled program")
    try:
        bundle = deserialize_from_flatbuffer_to_bundled_program(path.read_bytes())
    except Exception as exc:  # flatc/json errors of a damaged file: one line
        raise ProgramError(f"{path}: not a readable bundled program ({exc})") from None
    suites = [s for s in bundle.method_test_suites if s.method_name == METHOD]
    if not suites or not suites[0].test_cases:
        raise ProgramError(f"{path}: no test cases for method {METHOD!r}")
    cases = []
    for c, case in enumerate(suites[0].test_cases):
        where = f"{path}: test case {c}"
        cases.append(
            BundleCase(
                [_array(v, f"{where} input {i}") for i, v in enumerate(case.inputs)],
                [_array(v, f"{where} output {i}") for i, v in enumerate(case.expected_outputs)],
            )
        )
    return bytes(bundle.program), cases
