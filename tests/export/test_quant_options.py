"""The quantizer settings beyond --quant reach ExecuTorch's quantizer: per-tensor weights give
per-tensor weight quantization, a module set to `none` stays float, a module set to int16 gets
int16 activations; bad values are one `error:` line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sdk.cli.main import main
from sdk.errors import UsageError
from sdk.ethosu.config import QuantMode
from sdk.export.quant_options import QuantOptions, resolve_module

MODEL = str(Path(__file__).parent / "models" / "conv_linear.py")
CONV, LINEAR = "aten.conv2d.default", "aten.linear.default"
DQ_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
DQ_TENSOR = "quantized_decomposed.dequantize_per_tensor.default"


def op(quantized, target: str) -> torch.fx.Node:
    (node,) = [n for n in quantized.graph_module.graph.nodes if str(n.target) == target]
    return node


def source(node: torch.fx.Node, index: int) -> str:
    """What feeds argument `index` of `node`: a call's target, else the node's op (get_attr)."""
    arg = node.args[index]
    return str(arg.target) if arg.op == "call_function" else arg.op


@pytest.mark.slow
def test_per_tensor_weights_quantize_each_weight_with_one_scale(quantized_model):
    default = quantized_model(MODEL, "int8")
    per_tensor = quantized_model(MODEL, "int8", QuantOptions(weights="per-tensor"))
    for target in (CONV, LINEAR):
        assert source(op(default, target), 1) == DQ_CHANNEL
        assert source(op(per_tensor, target), 1) == DQ_TENSOR
    assert per_tensor.quantization["weights"] == "per-tensor"


@pytest.mark.slow
@pytest.mark.parametrize("target", ["fc", "torch.nn.Linear"])
def test_a_module_set_to_none_stays_float(quantized_model, target):
    quantized = quantized_model(MODEL, "int8", QuantOptions(modules={target: "none"}))
    linear = op(quantized, LINEAR)
    # float weight and bias, no dequantize before them (quantized, they would be int8/int32)
    assert source(linear, 1) == source(linear, 2) == "get_attr"
    assert source(op(quantized, CONV), 1) == DQ_CHANNEL  # the rest is quantized as before
    kind = "name" if target == "fc" else "type"
    assert [m["matched"] for m in quantized.quantization["modules"]] == [
        {kind: "fc" if kind == "name" else "torch.nn.modules.linear.Linear"}
    ]


@pytest.mark.slow
def test_a_module_set_to_int16_gets_int16_activations(quantized_model):
    quantized = quantized_model(MODEL, "int8", QuantOptions(modules={"conv": "int16"}))
    conv_input = op(quantized, CONV).args[0]
    linear_input = op(quantized, LINEAR).args[0]
    assert str(conv_input.target) == DQ_TENSOR and conv_input.args[-1] == torch.int16
    assert str(linear_input.target) == DQ_TENSOR and linear_input.args[-1] == torch.int8


@pytest.mark.slow
def test_export_reports_the_settings_and_runs_a_float_module_on_the_cpu(tmp_path, capsys):
    outdir = tmp_path / "out"
    argv = ["export", MODEL, "-o", str(outdir), "--weights", "per-tensor", "--io-quant",
            "symmetric", "--quant-module", "fc=none"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((outdir / "report.json").read_text())
    calibration = report["quantization"].pop("calibration")
    assert report["quantization"] == {
        "weights": "per-tensor",
        "io": "symmetric",
        "modules": [{"module": "fc", "quant": "none", "matched": {"name": "fc"}}],
    }
    assert (calibration["source"], calibration["samples"]) == ("example inputs", 1)
    assert "aten::bmm.out" in report["program"]["cpu_operators"]  # the float linear


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--weights", "per-row"], "--weights per-row: one of per-channel, per-tensor"),
        (["--io-quant", "asymmetric"], "--io-quant asymmetric: one of auto, symmetric"),
        (["--quant-module", "fc"], "--quant-module fc: give NAME_OR_TYPE=MODE"),
        (["--quant-module", "=none"], "--quant-module =none: give NAME_OR_TYPE=MODE"),
        (["--quant-module", "fc=int4"], "--quant-module fc=int4: MODE one of int8, int16, none"),
        (["--quant-module", "fc=none", "--quant-module", "fc=int8"], "fc: given twice"),
    ],
)
@pytest.mark.parametrize("command", ["export", "deploy", "numerics"])
def test_bad_values_are_one_error_line(tmp_path, capsys, command, args, fragment):
    outdir = tmp_path / "out"
    argv = [command, str(tmp_path / "absent.py"), "-o", str(outdir), *args]
    assert main(argv) == UsageError.exit_code
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
    assert not outdir.exists()


def test_a_module_name_or_type_the_model_lacks_is_refused():
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 1), torch.nn.ReLU())
    assert resolve_module(net, "0") == ("name", "0")
    assert resolve_module(net, "Conv2d") == ("type", torch.nn.Conv2d)
    assert resolve_module(net, "torch.nn.ReLU") == ("type", torch.nn.ReLU)
    with pytest.raises(UsageError, match=r"no such submodule or submodule type.*Conv2d"):
        resolve_module(net, "Linear")


def test_the_settings_reach_the_quantizers_setters():
    """--io-quant symmetric is ExecuTorch's set_io with the global config; module settings follow
    it (later is stronger) with the weight granularity of --weights."""
    calls: list[tuple] = []

    class Recorder:
        def __getattr__(self, name: str):
            return lambda *args: calls.append((name, *args))

    net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 1), torch.nn.Linear(1, 1))
    options = QuantOptions(
        weights="per-tensor", io="symmetric", modules={"0": "int16", "Linear": "none"}
    )
    options.apply(Recorder(), QuantMode.INT8, net)
    (_, global_config), (_, io_config), (_, name, conv_config), (_, tp, linear_config) = calls
    assert [c[0] for c in calls] == ["set_global", "set_io", "set_module_name", "set_module_type"]
    assert io_config is global_config and (name, tp, linear_config) == ("0", torch.nn.Linear, None)
    assert global_config.weight.qscheme == conv_config.weight.qscheme == torch.per_tensor_symmetric
    assert global_config.input_activation.dtype == torch.int8
    assert conv_config.input_activation.dtype == torch.int16
    assert QuantOptions().config("int8").weight.qscheme == torch.per_channel_symmetric
