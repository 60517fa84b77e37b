"""`sdk deploy` of a model whose fp32 output is all zeros (acos of ones): SNR against it is -inf
for any error at all, so the fp32 figures hold the output to an absolute bound there (README,
"How close") and warn of nothing; a genuinely wrong output still fails the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main

MODEL = Path(__file__).parent / "models" / "acos_of_ones.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> tuple[int, dict]:
    work = tmp_path_factory.mktemp("acos")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(work / "cache"))
        mp.setenv("SDK_FVP", str(work / "no-fvp-here"))  # QEMU, where an FVP is installed
        code = main(["deploy", "--board", "corstone300", "--target", "qemu", "--quiet",
                     str(MODEL), "-o", str(work / "out")])  # fmt: skip
    return code, json.loads((work / "out" / "deploy.json").read_text())


def test_an_all_zero_fp32_output_passes_within_its_bound(deployed):
    code, report = deployed
    assert code == 0 and report["passed"], report["failure"]
    fp32 = report["outputs"][0]["fp32"]
    assert fp32["snr_db"] == "-inf" and fp32["floor_met"]  # what missed before the bound
    assert 0 < fp32["max_abs"] <= fp32["zero_reference_bound"] < 0.01


def test_a_wrong_output_against_the_all_zero_reference_fails(deployed):
    """A wrong answer the host reference agrees with (a broken kernel on both): the verdict
    fails it against the quantized model, and the all-zero fp32 reference's bound warns."""
    from sdk.deploy.references import REFERENCE_FILES
    from sdk.deploy.verdict import judge_outputs
    from sdk.evaluation.accuracy import Tolerance
    from sdk.evaluation.compare import DEFAULT_RTOL
    from sdk.program.pte import load_program, output_quant_scales
    from sdk.utils.npz import read_arrays

    _, report = deployed
    program = Path(report["files"]["program"])
    entry = program.parent.parent  # the program entry: export/, the references
    scales = output_quant_scales(load_program(program))
    references = {ref: read_arrays(entry / name) for ref, name in REFERENCE_FILES.items()}

    def judge(output: np.ndarray):
        return judge_outputs(
            [output], [output], references, "int8", Tolerance(), DEFAULT_RTOL, scales
        )

    good = np.load(report["files"]["outputs"])["arr_0"]
    checks, failure, warnings = judge(good)
    assert failure is None and checks[0].ok and warnings == []  # the real output: passes
    wrong = np.full_like(good, 0.25)  # as a broken kernel might give; host agrees with it
    checks, failure, warnings = judge(wrong)
    assert not checks[0].ok and failure.startswith("output 0 vs the quantized model:")
    assert any("all-zero reference" in w and "all zeros" in w for w in warnings), warnings
