"""CPU-only ExecuTorch programs for the tests, and ExecuTorch's own runtime as their oracle
(shared by tests/firmware, tests/link, tests/cli)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def export_cpu(module, example_inputs, path: Path) -> Path:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    exported = torch.export.export(module, example_inputs)
    path.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return path


def random_inputs(pte: Path, seed: int = 0) -> list[np.ndarray]:
    from sdk.program.pte import load_program, numpy_dtype

    rng = np.random.default_rng(seed)
    arrays = []
    for info in load_program(pte).inputs():
        dtype = numpy_dtype(info.scalar_type)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
        else:
            bounds = np.iinfo(dtype)
            arrays.append(rng.integers(bounds.min, bounds.max, info.shape, dtype=dtype))
    return arrays


def oracle(pte: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """ExecuTorch's own runtime on the same program and inputs."""
    import executorch.kernels.quantized  # noqa: F401
    import torch
    from executorch.runtime import Runtime

    # The Program holds the bytes its method reads (constants) while it runs: a temporary
    # Program left them to be freed, and results were garbage under heap churn.
    program = Runtime.get().load_program(pte.read_bytes())
    method = program.load_method("forward")
    return [t.numpy() for t in method.execute([torch.from_numpy(x) for x in inputs])]
