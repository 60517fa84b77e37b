"""MLPerf Tiny's four models (examples/mlperf_tiny.py, ExecuTorch's own definitions) deploy on
QEMU at INT8 and INT16 (a16w8): the device equals the host reference, and the quantized
program meets the fp32 floors. A sweep (model x quantization): CI runs its first case and a
seeded sample of the rest (tests/conftest.py); bench/mlperf_tiny.py deploys all eight and prints
the README's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdk.cli.main import main

REPO = Path(__file__).resolve().parents[2]
MODELS = ("DsCnn", "ResNet8", "MobileNetV1", "DeepAutoEncoder")

pytestmark = [pytest.mark.slow, pytest.mark.sweep]


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlperf_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        mp.setenv("SDK_FVP", str(root / "no-fvp-here"))  # QEMU, as everywhere in the tests
        yield root


@pytest.mark.parametrize("quant", ["int8", "int16"])
@pytest.mark.parametrize("name", MODELS)
def test_mlperf_tiny_deploys(cache_root, tmp_path, capsys, name, quant):
    report_path = tmp_path / "deploy.json"
    code = main([
        "deploy", f"{REPO / 'examples' / 'mlperf_tiny.py'}:{name}", "--quant", quant,
        "-o", str(tmp_path / "out"), "--json", str(report_path), "--quiet",
    ])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    report = json.loads(report_path.read_text())
    assert report["passed"] and report["target"]["name"] == "qemu"
    assert report["placement"]["npu"], "the NPU takes the model's convolutions / linears"
    for output in report["outputs"]:
        assert output["host_reference"]["identical"]
        assert output["criterion"]["ok"]
        assert output["fp32"]["floor_met"] and output["quantized"]["floor_met"]
