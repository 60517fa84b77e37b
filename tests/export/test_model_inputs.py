"""What the model loader hands out: example and calibration inputs with row-major strides
(numpy views give size-1 dims stride 0, which ExecuTorch refuses deep in lowering), and
calibration samples that are finite (a NaN or Inf is refused naming input and sample)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sdk.errors import ModelLoadError
from sdk.export.model_loader import load_model

NUMPY_VIEW_MODEL = """
import numpy as np
import torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))

def model():
    torch.manual_seed(0)
    return M()

def _image(seed):
    return np.random.default_rng(seed).standard_normal((8, 8)).astype(np.float32)

def example_inputs():
    return (torch.from_numpy(_image(0)[None, None]),)  # strides (0, 0, 8, 1)

def calibration_inputs():
    return [(torch.from_numpy(_image(s)[None, None]),) for s in range(2)]
"""

BAD_CALIBRATION = """
import torch

def model():
    return torch.nn.ReLU()

def example_inputs():
    return (torch.zeros(1, 4), torch.zeros(1, 4))

def calibration_inputs():
    bad = torch.zeros(1, 4)
    bad[0, 2] = float("{value}")
    return [(torch.zeros(1, 4), torch.zeros(1, 4)), (torch.zeros(1, 4), bad)]
"""


@pytest.fixture
def numpy_view_model(tmp_path: Path) -> Path:
    path = tmp_path / "numpy_view.py"
    path.write_text(NUMPY_VIEW_MODEL)
    return path


def test_numpy_views_are_handed_out_with_standard_strides(numpy_view_model):
    import numpy as np

    raw = torch.from_numpy(np.zeros((8, 8), np.float32)[None, None])
    assert raw.stride() == (0, 0, 8, 1)  # what the loader is there to undo
    loaded = load_model(str(numpy_view_model))
    for t in (*loaded.example_inputs, *(s[0] for s in loaded.calibration or [])):
        assert t.shape == (1, 1, 8, 8) and t.stride() == (64, 64, 8, 1)
    want = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    assert np.array_equal(loaded.example_inputs[0].numpy()[0, 0], want)  # the same values


@pytest.mark.slow
def test_a_model_with_numpy_view_inputs_exports(numpy_view_model, tmp_path):
    """Without the normalisation: 'lowering for the NPU failed: ... 0 in strides'."""
    from sdk.export.pipeline import export_model

    result = export_model(str(numpy_view_model), tmp_path / "out")
    assert result.program_path.is_file() and len(result.report["delegates"]) == 1


@pytest.mark.parametrize(("value", "name"), [("nan", "NaN"), ("inf", "Inf"), ("-inf", "Inf")])
def test_a_non_finite_calibration_sample_is_refused(tmp_path, value, name):
    path = tmp_path / "bad_calibration.py"
    path.write_text(BAD_CALIBRATION.format(value=value))
    with pytest.raises(ModelLoadError) as info:
        load_model(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert f"calibration_inputs() sample 1, input 1 holds {name}" in message


def test_finite_calibration_samples_load(tmp_path):
    path = tmp_path / "good_calibration.py"
    path.write_text(BAD_CALIBRATION.format(value="0.5"))
    loaded = load_model(str(path))
    assert loaded.calibration is not None and len(loaded.calibration) == 2
    assert float(loaded.calibration[1][1][0, 2]) == 0.5


def test_nested_outputs_are_the_program_s_tensors_in_export_order():
    """An LSTM returns `out, (h, c)`: the program has three outputs, in torch.export's order,
    and the references are taken the same way (sdk.export.model_loader.output_tensors)."""
    import torch

    from sdk.export.model_loader import output_tensors

    lstm = torch.nn.LSTM(4, 3, batch_first=True).eval()
    x = torch.randn(1, 2, 4)
    flat = output_tensors(lstm(x))
    exported = torch.export.export(lstm, (x,)).module()(x)
    assert len(flat) == 3
    for ours, theirs in zip(flat, output_tensors(exported), strict=True):
        assert torch.equal(ours, theirs)
    assert len(output_tensors(torch.ones(2))) == 1 and output_tensors((1, None)) == []
