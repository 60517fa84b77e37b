"""`sdk deploy` of a model over a 224x224 RGB float image on QEMU (examples/image_pool.py): its
inputs and outputs travel outside the UART (docs/link.md "Large inputs and outputs") and the
comparison with the host reference still holds bit for bit; a data set's later samples come
from semihosting files. Real export, Vela, firmware build and QEMU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.utils.npz import read_arrays

pytestmark = pytest.mark.slow
MODEL = Path(__file__).resolve().parents[2] / "examples" / "image_pool.py"


def requests(log: Path) -> list[str]:
    return [line.split()[2] for line in log.read_text().splitlines() if line.split()[1:2] == [">"]]


def test_an_image_sized_model_deploys_on_qemu_without_its_io_crossing_the_uart(
    tmp_path: Path, monkeypatch
):
    from sdk.targets.host import run_host

    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(3)
    samples = (rng.random((3, 1, 3, 224, 224), dtype=np.float32) * 2 - 1).astype(np.float32)
    np.savez(tmp_path / "images.npz", arr_0=samples[:, 0])
    out = tmp_path / "out"
    code = main([
        "deploy", "--board", "corstone300", str(MODEL), "--target", "qemu", "-o", str(out),
        "--json", str(tmp_path / "report.json"), "--dataset", str(tmp_path / "images.npz"),
        "--quiet",
    ])  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 0, report.get("failure")
    (output,) = report["outputs"]
    assert output["host_reference"]["identical"] is True
    inputs = read_arrays(Path(report["files"]["program"]).parents[1] / "inputs.npz")
    assert inputs[0].shape == (1, 3, 224, 224) and inputs[0].dtype == np.float32
    (host,) = run_host(Path(report["files"]["program"]), inputs)
    np.testing.assert_array_equal(read_arrays(out / "outputs.npz")[0], host)
    sent = requests(out / "run" / "link.log")
    assert sent.count("SET_INPUT_SLOT") == 1  # the example input, preloaded
    assert sent.count("SET_INPUT_FILE") == 3  # the data set's samples, from files
    assert sent.count("GET_OUTPUT_FILE") == 4 and "NPU_WRITE_FILE" in sent
    assert not {"SET_INPUT", "GET_OUTPUT", "NPU_WRITE"} & set(sent)
    dataset = report["dataset"]
    assert dataset["measured"] == dataset["samples"] == 3 and dataset["passed"] is True
