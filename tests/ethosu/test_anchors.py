"""The published measurements the cycle model answers to (bench/npu_anchors.py). The repository
holds none of the networks: the tests that check figures run when the published bytes are given
($SDK_ANCHOR_DATA, else ../shared/anchors beside the repository; docs/npu-timing.md says where to
get them) and are skipped, naming the missing file, otherwise. There the model of Vela's compile
of them stays within 5% of the PMU counts Arm published (a regression guard on
sdk/ethosu/cycles.py). How the bench reads and checks bytes is tested on bytes made here."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "npu_anchors.py"


@pytest.fixture(scope="module")
def anchors():
    spec = importlib.util.spec_from_file_location("npu_anchors", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _anchor(anchors, file_name: str):
    return next(a for a in anchors.ANCHORS if a.file_name == file_name)


def _published(anchors, file_name: str) -> tuple[object, bytes]:
    """The anchor and its published bytes, or a skip naming the file that is not given."""
    anchor = _anchor(anchors, file_name)
    data_dir = anchors.default_data_dir()
    path = anchors.find_network(anchor, data_dir)
    if path is None:
        pytest.skip(
            f"{file_name} (or {file_name}.cpp) not given: not in "
            f"{data_dir or f'${anchors.DATA_ENV} or {anchors.SHARED_DATA}'} "
            "(docs/npu-timing.md says where to get it)"
        )
    data, why = anchors.network_bytes(anchor, path)
    assert data is not None, why  # a file under the published name that is not the published one
    return anchor, data


def _synthetic(anchors) -> tuple[object, bytes]:
    """The KWS anchor re-pointed at bytes made here: a TFLite header and seeded noise."""
    data = b"\x1c\x00\x00\x00TFL3" + np.random.default_rng(7).bytes(3001)
    anchor = dataclasses.replace(
        _anchor(anchors, "kws_micronet_m.tflite"),
        sha256=hashlib.sha256(data).hexdigest(), size=len(data),
    )  # fmt: skip
    return anchor, data


def test_each_network_with_bytes_says_its_file_and_where_it_is_published(anchors) -> None:
    named = [a for a in anchors.ANCHORS if a.sha256]
    assert len(named) == 4
    for anchor in named:
        assert anchor.file_name and anchor.size and anchor.bytes_from, anchor.name
        assert anchor.file_name in anchor.bytes_from, anchor.name  # the file, or its C array


@pytest.mark.parametrize(
    "network",
    [
        "kws_micronet_m.tflite",
        "kws_micronet_m_vela_H128.tflite",
        "yolo-fastest_192_face_v4.tflite",
        "mobilenet_v2_1.0_224_INT8.tflite",
    ],
)
def test_the_given_bytes_are_the_published_files(anchors, network) -> None:
    _, data = _published(anchors, network)
    assert data[4:8] == b"TFL3"


def test_a_c_array_source_gives_the_bytes_and_others_are_refused(anchors, tmp_path) -> None:
    anchor, data = _synthetic(anchors)
    rows = [", ".join(f"0x{b:02x}" for b in data[k : k + 14]) for k in range(0, len(data), 14)]
    source = tmp_path / f"{anchor.file_name}.cpp"
    source.write_text(
        "/* gen_model_cpp.py output */\nstatic const uint8_t nn_model[] MODEL_ATTRIBUTE = {\n    "
        + ",\n    ".join(rows)
        + "\n};\n"
    )
    assert anchors.find_network(anchor, tmp_path) == source  # the C array, by its published name
    assert anchors.network_bytes(anchor, source)[0] == data
    (tmp_path / anchor.file_name).write_bytes(data)
    assert anchors.find_network(anchor, tmp_path) == tmp_path / anchor.file_name  # .tflite first
    assert anchors.network_bytes(anchor, tmp_path / anchor.file_name)[0] == data

    other = tmp_path / "other.tflite"
    other.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    got, why = anchors.network_bytes(anchor, other)
    assert got is None and "not the published file" in why
    other.write_bytes(data + b"\x00")
    got, why = anchors.network_bytes(anchor, other)
    assert got is None and "not the published file" in why


def test_the_data_directory_is_the_flag_then_the_environment(anchors, tmp_path, monkeypatch):
    monkeypatch.setenv(anchors.DATA_ENV, str(tmp_path))
    assert anchors.default_data_dir() == tmp_path
    monkeypatch.delenv(anchors.DATA_ENV)
    shared = anchors.SHARED_DATA
    assert anchors.default_data_dir() == (shared if shared.is_dir() else None)


def test_networks_without_bytes_are_listed_with_where_to_get_them(anchors, tmp_path, capsys):
    """An empty directory: nothing compiled, every network with published bytes in the table
    as "bytes not given" and below it with its size, sha256 and source."""
    anchors.main(["--data", str(tmp_path)])
    out = capsys.readouterr().out
    table, _, below = out.partition("Bytes not given")
    for anchor in (a for a in anchors.ANCHORS if a.sha256):
        assert f"bytes not given: {anchor.file_name}" in table
        assert f"- {anchor.file_name}: {anchor.size:,} bytes, sha256 {anchor.sha256}" in below
        assert anchor.bytes_from in below


@pytest.mark.slow
@pytest.mark.parametrize("network", ["kws_micronet_m.tflite", "yolo-fastest_192_face_v4.tflite"])
def test_a_network_is_modelled_within_5_percent_of_its_measurement(anchors, tmp_path, network):
    """KWS 419,185 and Vela's 417,771 against 413,814 measured; YOLO-Fastest 2,079,567 against
    2,050,339 (Vela's 2,139,281): 5% catches a model that drifts back to regor's 1.0/element
    AO for clamps that clip nothing (KWS 437,038, 1.056; YOLO-Fastest 2,850,912, 1.39)."""
    anchor, data = _published(anchors, network)
    row = anchors.run_tied(anchor, data, tmp_path, 1)
    assert abs(row.model / anchor.measured - 1) <= 0.05
    assert abs(row.vela / anchor.measured - 1) <= 0.05


@pytest.mark.slow
def test_the_eval_kits_kws_stream_moves_what_its_pmu_counted(anchors, tmp_path) -> None:
    """The kit's own compile (its weight reads and writes equal the published beats exactly:
    the measured stream's traffic): the model's AXI beats within 2% of each counter (IFM reads
    were 6.7% over when each OFM block read a whole IFM block)."""
    stream, data = _published(anchors, "kws_micronet_m_vela_H128.tflite")
    row = anchors.run_tied(stream, data, tmp_path, 1)
    for name, measured in stream.beats:
        assert abs(row.beats[name] / measured - 1) <= 0.02, (name, row.beats[name], measured)
    assert abs(row.model / stream.measured - 1) <= 0.05
