"""The cache keys follow everything that makes their entry: change a part, get another key."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from sdk.cache import digest
from sdk.deploy import keys
from sdk.export.model_loader import ModelSpec
from sdk.firmware.boards import load_board

REPO = Path(__file__).resolve().parents[2]


def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    shutil.copy(REPO / "examples" / "shared_split.py", folder / "net.py")
    return folder


def program_key(folder: Path, **changes) -> str:
    args = {"model": str(folder / "net.py"), "inputs_file": None, "npu": "ethos-u55-128",
            "quant": "int8", "cpu_ops": []} | changes  # fmt: skip
    args["model"] = ModelSpec.parse(args["model"])
    return digest(keys.program_key_parts(**args))


def test_program_key_follows_the_model_its_folder_and_the_config(tmp_path, monkeypatch):
    folder = model_dir(tmp_path)
    base = program_key(folder)
    assert program_key(folder) == base
    assert program_key(folder, quant="int16") != base
    assert program_key(folder, npu="ethos-u55-64") != base
    assert program_key(folder, input_layout="channels-last") != base
    assert program_key(folder, cpu_ops=["aten.bmm"]) != base
    assert program_key(folder, cpu_ops=["aten.bmm", "aten.add"]) == program_key(
        folder, cpu_ops=["aten.add", "aten.bmm"]
    )
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(b"one")
    with_inputs = program_key(folder, inputs_file=inputs)
    inputs.write_bytes(b"two")
    assert with_inputs != base and program_key(folder, inputs_file=inputs) != with_inputs
    (folder / "weights.bin").write_bytes(b"w1")  # data the model loads, beside it
    weights = program_key(folder)
    assert weights != base
    (folder / "weights.bin").write_bytes(b"w2")
    assert program_key(folder) != weights
    (folder / "lib").mkdir()
    (folder / "lib" / "layers.py").write_text("X = 1\n")  # code it can import
    layers = program_key(folder)
    assert layers != weights
    (folder / "lib" / "layers.py").write_text("X = 2\n")
    assert program_key(folder) != layers


def test_program_key_follows_the_vela_configuration(tmp_path):
    """Each memory mode, its figures and the extra Vela flags make another program."""
    from dataclasses import replace

    from sdk.ethosu.memories import EXECUTORCH_DEFAULT, VelaMemory, vela_memory
    from sdk.firmware.boards import load_board

    folder = model_dir(tmp_path)
    base = program_key(folder)
    default = keys.vela_key(VelaMemory(EXECUTORCH_DEFAULT), [])
    assert program_key(folder, vela=default) == base
    memories = load_board("corstone300").npu_memories
    shared = vela_memory(memories, "Shared_Sram", tmp_path / "ini")
    found = {
        program_key(folder, vela=keys.vela_key(shared, [])),
        program_key(folder, vela=keys.vela_key(vela_memory(memories, "Sram_Only", tmp_path), [])),
        program_key(folder, vela=keys.vela_key(shared, ["--optimise=Size"])),
    }
    slower = replace(memories, clock_hz=memories.clock_hz // 2)  # other figures, same name
    found.add(program_key(folder, vela=keys.vela_key(vela_memory(slower, "Shared_Sram",
                                                                 tmp_path / "b"), [])))  # fmt: skip
    assert base not in found and len(found) == 4


def test_program_key_follows_the_quantizer_settings(tmp_path):
    from sdk.export.quant_options import QuantOptions

    folder = model_dir(tmp_path)
    base = program_key(folder)
    assert program_key(folder, quantization=QuantOptions().to_json()) == base  # the defaults
    changed = [
        QuantOptions(weights="per-tensor"),
        QuantOptions(io="symmetric"),
        QuantOptions(modules={"fc": "none"}),
        QuantOptions(modules={"fc": "int16"}),
        QuantOptions(modules={"Linear": "none"}),
        QuantOptions(modules={"fc": "none", "conv": "int16"}),
        QuantOptions(modules={"conv": "int16", "fc": "none"}),  # order is precedence
    ]
    keys_ = {program_key(folder, quantization=o.to_json()) for o in changed}
    assert len(keys_) == len(changed) and base not in keys_


def test_program_key_follows_package_versions(tmp_path, monkeypatch):
    folder = model_dir(tmp_path)
    base = program_key(folder)
    versions = keys.package_versions()
    monkeypatch.setattr(keys, "package_versions", lambda: {**versions, "ethos-u-vela": "0.0"})
    assert program_key(folder) != base


def test_firmware_key_follows_board_kernels_npu_toolchain_and_tools(monkeypatch):
    board = load_board("corstone300")
    base = digest(keys.firmware_key_parts(board, "manifest", "ethos-u55-128"))
    assert digest(keys.firmware_key_parts(board, "manifest", "ethos-u55-128")) == base
    assert digest(keys.firmware_key_parts(board, "other kernels", "ethos-u55-128")) != base
    assert digest(keys.firmware_key_parts(board, "manifest", "ethos-u55-64")) != base
    other_gcc = dataclasses.replace(board, toolchain_prefix="no-such-prefix-")
    assert digest(keys.firmware_key_parts(other_gcc, "manifest", "ethos-u55-128")) != base
    tools = keys.build_tools()
    monkeypatch.setattr(keys, "build_tools", lambda: {**tools, "flatc": "flatc version 0"})
    assert digest(keys.firmware_key_parts(board, "manifest", "ethos-u55-128")) != base


def test_firmware_key_follows_the_firmware_sources(monkeypatch, tmp_path):
    board = load_board("corstone300")
    root = tmp_path / "repo"
    shutil.copytree(REPO / "firmware" / "runtime", root / "firmware" / "runtime")
    monkeypatch.setattr(keys, "FIRMWARE_DIR", root / "firmware")
    before = keys.firmware_sources_hash(board)
    next((root / "firmware").rglob("*.cpp")).write_text("// changed\n")
    assert keys.firmware_sources_hash(board) != before


def sdk_copy(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the SDK package the keys hash instead of the real one, to change freely."""
    copy = tmp_path / "sdk"
    shutil.copytree(keys.SDK_PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(keys, "SDK_PACKAGE_DIR", copy)
    return copy


def touch(path: Path) -> None:
    path.write_text(path.read_text() + "# changed\n")


def test_program_key_follows_the_sdk_code_the_export_imports(tmp_path, monkeypatch):
    folder = model_dir(tmp_path)
    real = program_key(folder)
    sdk = sdk_copy(tmp_path, monkeypatch)
    assert program_key(folder) == real  # the same code hashes alike wherever it is
    touch(
        sdk / "evaluation" / "numerics.py"
    )  # the report's numerics, imported by the export's report
    numerics = program_key(folder)
    assert numerics != real
    for unrelated in (
        "cli/doctor.py",
        "targets/flash.py",
        "deploy/render.py",
        "firmware/kernelgen.py",
    ):
        touch(sdk / unrelated)  # what no program entry's writer imports
    assert program_key(folder) == numerics
    touch(sdk / "export" / "pipeline.py")
    assert program_key(folder) != numerics


def test_reference_and_firmware_code_follow_their_writers_imports(tmp_path, monkeypatch):
    sdk = sdk_copy(tmp_path, monkeypatch)
    reference = keys.sdk_code_hash(keys.REFERENCE_WRITER)
    firmware = keys.sdk_code_hash(keys.FIRMWARE_WRITER, scripts=(keys.SCONSTRUCT,))
    touch(sdk / "cli" / "doctor.py")
    assert keys.sdk_code_hash(keys.REFERENCE_WRITER) == reference
    touch(sdk / "reference" / "executor.py")  # runs the reference's delegates
    assert keys.sdk_code_hash(keys.REFERENCE_WRITER) != reference
    assert keys.sdk_code_hash(keys.FIRMWARE_WRITER, scripts=(keys.SCONSTRUCT,)) == firmware
    touch(
        sdk / "firmware" / "kernelgen.py"
    )  # generates the kernel registrations the build compiles
    assert keys.sdk_code_hash(keys.FIRMWARE_WRITER, scripts=(keys.SCONSTRUCT,)) != firmware


def test_a_writer_that_is_not_there_is_an_error():
    with pytest.raises(LookupError, match="no_such_fill"):
        keys.sdk_code_hash("sdk.deploy.pipeline:no_such_fill")


def test_deploy_keys_and_exports_the_program_with_its_quantizer_settings(tmp_path, monkeypatch):
    """Both halves of a cached program see the settings: the key it is found by and the export
    that fills it (stubbed: nothing is exported)."""
    from sdk.cache import Cache
    from sdk.deploy import pipeline
    from sdk.export.quant_options import QuantOptions

    class Stop(Exception):
        pass

    seen: dict = {}

    def export_into(folder, model, inputs, npu, quant, cpu_ops, logs, options, dataset, io,
                    **vela) -> None:  # fmt: skip
        seen["options"] = options

    def cached(cache, kind, parts, fill, scratch):
        seen["key"] = parts["quantization"]
        fill(tmp_path)
        raise Stop

    monkeypatch.setattr(pipeline, "export_into", export_into)
    monkeypatch.setattr(pipeline, "cached", cached)
    options = QuantOptions(weights="per-tensor", modules={"fc": "none"})
    with pytest.raises(Stop):
        pipeline.deploy(str(model_dir(tmp_path) / "net.py"), target="qemu",
                        outdir=tmp_path / "out", cache=Cache(enabled=False),
                        quant_options=options)  # fmt: skip
    assert seen == {"key": options.to_json(), "options": options}
