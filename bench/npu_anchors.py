"""Published Ethos-U PMU counts against the SDK's cycle model and Vela's own estimate.

    PYTHONPATH=. python bench/npu_anchors.py [--data DIR] [--shape-only] [--top 3]

Each anchor is a count Arm published from a PMU (FVP or FPGA) with the network and the Vela
configuration it was compiled with. The repository holds none of the networks: DIR (default
$SDK_ANCHOR_DATA, else ../shared/anchors beside the repository when it exists) holds those a user
has, under their published names (the .tflite, or the C array source `<name>.cpp` Arm
publishes); docs/npu-timing.md says where each is published. Where a network's bytes are given
(checked by size and sha256) the bench compiles them with the installed Vela (5.1.0) for that
configuration and prints model / measured and Vela / measured. The measured streams were
compiled by older Vela releases (said per anchor), so a ratio compares the same network and
configuration, not the same stream. A network whose bytes are not given is listed as such, with
where to get them; anchors without published bytes are listed with their figures;
`--shape-only` times networks with their layer shapes and random weights
(bench/models/anchor_shapes.py), labelled as such.
Shape-only exports are slow (MobileNetV2 at 224: about a minute each): each is made once and
kept under the system's temporary directory (SHAPE_CACHE), keyed by the shape files and flags.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA_ENV = "SDK_ANCHOR_DATA"  # the directory of the published networks a user has
SHARED_DATA = REPO.parent / "shared" / "anchors"  # the default when it exists
SHAPES = REPO / "bench" / "models" / "anchor_shapes.py"
SHAPE_CACHE = Path(tempfile.gettempdir()) / "sdk-npu-anchors"  # shape-only exports, made once
MLEK = "ARM-software/ml-embedded-evaluation-kit (mirror alifsemi/alif_ml-embedded-evaluation-kit)"
# The eval kit's default Vela run for the U55 (set_up_default_resources.py). Its ini
# (scripts/vela/default_vela.ini) gives Ethos_U55_High_End_Embedded the stock Arm/vela.ini's
# clocks, bandwidths, bursts and read latencies; it differs in OffChipFlash_write_latency (64
# vs 0: nothing writes the flash) and leaves max_reads/max_writes at Vela's defaults.
MLEK_FLAGS = ["--optimise=Performance"]
MLEK_ARENA = ["--arena-cache-size=2097152"]  # 2 MiB, the MPS3 SRAM: added after 21.08


@dataclass(frozen=True)
class Anchor:
    """One published measurement and what it was measured on."""

    name: str
    npu: str
    system_config: str
    memory_mode: str
    measured: int  # the PMU count compared (NPU_ACTIVE where published, else the cycle counter)
    measured_what: str
    platform: str
    source: str  # where the figure and its configuration are published
    compiled_by: str  # the Vela that compiled the measured stream
    vela_flags: tuple[str, ...] = ()
    sha256: str | None = None  # the network's bytes, when published
    size: int | None = None
    file_name: str | None = None  # its published name: DIR/<file_name> or DIR/<file_name>.cpp
    bytes_from: str = ""  # where the bytes are published
    published_vela: int | None = None  # a Vela estimate printed in the same log
    beats: tuple[tuple[str, int], ...] = ()  # the PMU's AXI beat counts published with it
    why_untied: str = ""
    shape_only: str | None = None  # bench/models/anchor_shapes.py class


ANCHORS = [
    Anchor(
        "KWS MicroNet-M (int8)",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
        413_814,
        "NPU ACTIVE (TOTAL 414,172 incl. 358 idle)",
        "Corstone-300 FVP, U55-128",
        f"{MLEK} docs/use_cases/kws.md lines 417-419 (tag 24.05; since 76a1580, 2021-12-24, "
        "MLECO-2599); configuration: set_up_default_resources.py at 76a1580 lines 139, 207, "
        "253, 340-347 (--accelerator-config=ethos-u55-128 --optimise Performance, "
        "Ethos_U55_High_End_Embedded, Shared_Sram, --arena-cache-size=2097152)",
        "ethos-u-vela 3.2.0",
        tuple(MLEK_FLAGS + MLEK_ARENA),
        sha256="c1feed3af5dac44de7477fb4161670ba18a3fc06039e4a14da41b1c4dd454cb4",
        size=181_968,
        file_name="kws_micronet_m.tflite",
        bytes_from="ARM-software/ML-zoo 9f506fe52b39df545f0e6c5ff9223f671bc5ae00 models/"
        "keyword_spotting/micronet_medium/tflite_int8/kws_micronet_m.tflite (Git LFS), or its C "
        "array: ARM-software/ML-examples 56b9fee cmsis-pack-examples/kws/src/"
        "kws_micronet_m.tflite.cpp",
        beats=(("AXI0_RD", 132_130), ("AXI0_WR", 48_252), ("AXI1_RD", 17_544)),
    ),
    Anchor(
        "KWS MicroNet-M, eval kit's Vela stream",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
        413_814,
        "NPU ACTIVE, as above",
        "Corstone-300 FVP, U55-128",
        "the measurement above; the stream: ARM-software/ML-examples cmsis-pack-examples/kws/src/"
        "kws_micronet_m_vela_H128.tflite.cpp (56b9fee; generated 2022-06-21 from the eval "
        "kit's kws_micronet_m_vela_H128.tflite, its Vela run for this configuration)",
        "ethos-u-vela 3.4.0 (inferred: the eval kit's pin in 22.05, set_up_default_resources.py "
        "line 384; the file does not say)",
        sha256="4588354334d8d57b9d678a0c1cb10e3f90701b78f1c0f3331d00744992dff037",
        size=157_040,
        file_name="kws_micronet_m_vela_H128.tflite",
        bytes_from="its C array: ARM-software/ML-examples 56b9fee cmsis-pack-examples/kws/src/"
        "kws_micronet_m_vela_H128.tflite.cpp (the eval kit builds the .tflite, it publishes none)",
        beats=(("AXI0_RD", 132_130), ("AXI0_WR", 48_252), ("AXI1_RD", 17_544)),
    ),
    Anchor(
        "YOLO-Fastest 192 face v4 (int8)",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
        2_050_339,
        "NPU ACTIVE (TOTAL 2,051,194 incl. 855 idle)",
        "Corstone-300 FVP, U55-128 (the kit's default H128)",
        f"{MLEK} docs/use_cases/object_detection.md lines 367-372 (tag 24.05; since 06fcf75, "
        "2022-01-12, 'Face detection demo from Emza Visual Sense'); configuration: "
        "set_up_default_resources.py at 06fcf75 lines 133, 144, 258, 345-352 (as KWS), "
        "scripts/cmake/common_user_options.cmake line 118 (default H128); bytes: "
        "emza-vs/ModelZoo v1.0 object_detection/yolo-fastest_192_face_v4.tflite (LFS pointer)",
        "ethos-u-vela 3.2.0",
        tuple(MLEK_FLAGS + MLEK_ARENA),
        sha256="e94bcdb011784bead70ab0c0e9d2dae1a9ea5f103b43e1e6fac3019302cf71ab",
        size=510_280,
        file_name="yolo-fastest_192_face_v4.tflite",
        bytes_from="emza-vs/ModelZoo v1.0 object_detection/yolo-fastest_192_face_v4.tflite (Git "
        "LFS), or its C array: ARM-software/ML-examples 56b9fee cmsis-pack-examples/"
        "object-detection/src/yolo-fastest_192_face_v4.tflite.cpp",
        beats=(("AXI0_RD", 678_955), ("AXI0_WR", 467_545), ("AXI1_RD", 46_895)),
    ),
    Anchor(
        "MobileNetV2 1.0 224 (int8)",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
        7_345_741,
        "NPU ACTIVE (TOTAL 7,346,172 incl. 431 idle)",
        "Corstone-300 FVP, U55-128",
        f"{MLEK} docs/use_cases/img_class.md lines 374-376 (tag 24.05; since 0d11059, "
        "2021-08-12, MLECO-1904); configuration: set_up_default_resources.py at 0d11059 lines "
        "140, 215-221 (--accelerator-config=ethos-u55-128 --optimise Performance, "
        "Ethos_U55_High_End_Embedded, Shared_Sram; no arena cache limit); bytes: ML-zoo "
        "e0aa361 models/image_classification/mobilenet_v2_1.0_224/tflite_int8/"
        "mobilenet_v2_1.0_224_INT8.tflite (LFS pointer)",
        "ethos-u-vela 3.0.0",
        tuple(MLEK_FLAGS),
        sha256="bd8d56b80557a5fca7acf14f61e5339285c02810f7d7afa714b9763fc4b86e95",
        size=4_020_936,
        beats=(("AXI0_RD", 2_468_259), ("AXI0_WR", 1_151_319), ("AXI1_RD", 432_351)),
        file_name="mobilenet_v2_1.0_224_INT8.tflite",
        bytes_from="ARM-software/ML-zoo e0aa361 models/image_classification/"
        "mobilenet_v2_1.0_224/tflite_int8/mobilenet_v2_1.0_224_INT8.tflite (Git LFS)",
        shape_only="MobileNetV2At224",
    ),
    Anchor(
        "MNIST MLP 784-128-64-10 (int8)",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded?",
        "Shared_Sram",
        91_000,
        "NPU ACTIVE, published rounded ('91k')",
        "MPS3 FPGA, Corstone-300 reference design, U55-128",
        "ARM-software/ML-examples pruning-clustering-ethos-u/"
        'pruning_clustering_for_Arm_Ethos_U55_U65.ipynb (56b9fee), cells 12 ("Performance of '
        'the baseline model": 91k NPU Active cycles, 12k AXI1 read beats, 93.17 KiB encoded '
        "weights, Shared_Sram) and 26 (the table); the system config is not stated",
        "not stated (notebook of 2023-05)",
        why_untied="its weights are trained when the notebook runs: no bytes published",
        shape_only="MnistMlp",
    ),
    Anchor(
        "torchvision MobileNetV2 (ExecuTorch mv2, int8)",
        "ethos-u85-128",
        "Ethos_U85_SYS_DRAM_Mid",
        "Sram_Only",
        4_738_932,
        "ethosu_pmu_cycle_cntr",
        "Corstone-320 FVP, U85-128",
        "ArmDeveloperEcosystem/arm-learning-paths content/learning-paths/"
        "embedded-and-microcontrollers/visualizing-ethos-u-performance/8-evaluate-output.md "
        '(36883f7), sections "Test Batch Performance" (Vela: Total cycles 4,942,076) and '
        '"Observe the Ethos-U Performance Monitoring Unit" (PMU report)',
        "ExecuTorch's pinned Vela at the time (not stated)",
        published_vela=4_942_076,
        # the same log's PMU counters 0 and 1: SRAM read and write beats (16 bytes)
        beats=(("AXI0_RD", 1_447_178), ("AXI0_WR", 420_661)),
        why_untied="torchvision's weights quantized at run time by "
        "aot_arm_compiler: no bytes published",
        shape_only="TorchvisionMobileNetV2At224",
    ),
]


def bytes_from_c_array(text: str) -> bytes:
    """A model's bytes from a C/C++ source that holds them as a `0x..` initialiser (Arm's
    gen_model_cpp.py output: `nn_model[] = { 0x28, 0x00, ... };`): the largest one, since
    such files also hold small tables (anchors, labels)."""
    bodies = re.findall(r"\[\]\s*[A-Z_]*\s*=\s*\{([^}]*)\}", text)
    best = max(bodies, key=lambda body: body.count("0x"), default="")
    return bytes(int(h, 16) for h in re.findall(r"0x([0-9a-fA-F]{2})", best))


def default_data_dir() -> Path | None:
    """Where the published networks are when `--data` does not say: $SDK_ANCHOR_DATA, else
    ../shared/anchors beside the repository if it exists."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return SHARED_DATA if SHARED_DATA.is_dir() else None


def find_network(anchor: Anchor, data_dir: Path | None) -> Path | None:
    """The anchor's file in `data_dir` under its published name: the .tflite, else its C array
    source `<name>.cpp`; None when neither is there."""
    if data_dir is None or anchor.file_name is None:
        return None
    for name in (anchor.file_name, f"{anchor.file_name}.cpp"):
        if (data_dir / name).is_file():
            return data_dir / name
    return None


def network_bytes(anchor: Anchor, path: Path | None) -> tuple[bytes | None, str]:
    """The anchor's bytes from `path` (a .tflite, or a C array source), checked against the
    published size and sha256; None and why when not given or not the published file."""
    if path is None:
        return None, f"bytes not given: {anchor.file_name} (where to get it: below)"
    raw = path.read_bytes()
    data = raw if path.suffix == ".tflite" else bytes_from_c_array(raw.decode("utf-8", "replace"))
    digest = hashlib.sha256(data).hexdigest()
    if digest != anchor.sha256 or len(data) != anchor.size:
        return None, f"{path}: sha256 {digest[:12]}.. ({len(data)} bytes), not the published file"
    return data, str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


@dataclass
class Row:
    anchor: Anchor
    model: int | None = None
    vela: int | None = None
    note: str = ""
    beats: dict[str, int] | None = None  # the model's AXI beats, as the PMU names them

    def beats_line(self) -> str | None:
        """Measured vs modelled AXI beats, where both are known."""
        if not self.beats or not self.anchor.beats:
            return None
        parts = [
            f"{name} {measured:,} vs {self.beats[name]:,} ({self.beats[name] / measured:.3f})"
            for name, measured in self.anchor.beats
        ]
        name = self.anchor.name + (" SHAPE ONLY" if self.note.startswith("SHAPE ONLY") else "")
        return f"{name:34} " + "; ".join(parts)

    def line(self) -> str:
        a = self.anchor

        def ratio(x: int | None) -> str:
            return f"{x / a.measured:.3f}" if x else "-"

        model = f"{self.model:,}" if self.model else "-"
        vela = f"{self.vela:,}" if self.vela else "-"
        return (
            f"{a.name[:34]:34} {a.measured:>10,} {model:>12} {ratio(self.model):>7} "
            f"{vela:>10} {ratio(self.vela):>7}  {self.note}"
        )


def run_tied(anchor: Anchor, data: bytes, workdir: Path, top: int) -> Row:
    """The published bytes compiled here for the anchor's configuration, timed by the model."""
    from sdk.ethosu.estimate import STOCK_INI, estimate_tflite

    network = workdir / f"{anchor.name.split()[0].lower()}.tflite"
    network.write_bytes(data)
    flags = [
        f"--accelerator-config={anchor.npu}", f"--config={STOCK_INI}",
        f"--system-config={anchor.system_config}", f"--memory-mode={anchor.memory_mode}",
        *anchor.vela_flags,
    ]  # fmt: skip
    estimate = estimate_tflite(network, flags, workdir / network.stem)
    (delegate,) = estimate.delegates
    if delegate.vela_ops:
        rows = sorted(delegate.rows(), key=lambda r: -abs(r.modelled - (r.vela or 0)))
        detail = "; ".join(f"{r.operator} {r.modelled:,} vs Vela {r.vela:,}" for r in rows[:top])
        print(f"  {anchor.name}: largest model-vs-Vela operations: {detail}")
    timing = delegate.timing
    beats = {f"{p}_RD": n for p, n in timing.read_beats.items()}
    beats |= {f"{p}_WR": n for p, n in timing.write_beats.items()}
    if estimate.kind != "tflite":  # a stream Vela compiled elsewhere: timed as it is
        note = f"stream by {anchor.compiled_by}"
        return Row(anchor, estimate.npu_cycles_modelled, None, note, beats)
    note = f"same bytes and config; measured stream by {anchor.compiled_by}"
    return Row(anchor, estimate.npu_cycles_modelled, estimate.vela_estimate_cycles, note, beats)


def run_shape_only(anchor: Anchor) -> Row:
    """A network with the anchor's layer shapes and random weights, exported by the SDK for the
    anchor's NPU, system config and memory mode (stock ini), once (SHAPE_CACHE)."""
    from sdk.ethosu.estimate import estimate_pte
    from sdk.export.pipeline import export_model

    layout = "channels-last" if anchor.shape_only == "MobileNetV2At224" else "as-model"
    flags = list(anchor.vela_flags)
    if not anchor.system_config.endswith("?"):  # stated where it was published
        flags += [f"--system-config={anchor.system_config}",
                  f"--memory-mode={anchor.memory_mode}"]  # fmt: skip
    key = hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted(SHAPES.parent.glob("*.py")))
        + repr((anchor.shape_only, anchor.npu, flags, layout)).encode()
    ).hexdigest()[:16]
    outdir = SHAPE_CACHE / f"{anchor.shape_only}-{key}"
    program = outdir / "model.pte"
    if not program.is_file():
        export_model(
            f"{SHAPES}:{anchor.shape_only}", outdir, npu=anchor.npu, vela_args=flags,
            input_layout=layout,
        )  # fmt: skip
    estimate = estimate_pte(program, outdir / "estimate")
    weights = sum(len(info.vela.blocks["weight_data"]) for info in _delegates(program))
    beats: dict[str, int] = {}
    for delegate in estimate.delegates:
        for direction, counts in (("RD", delegate.timing.read_beats),
                                  ("WR", delegate.timing.write_beats)):  # fmt: skip
            for port, n in counts.items():
                beats[f"{port}_{direction}"] = beats.get(f"{port}_{direction}", 0) + n
    return Row(
        anchor, estimate.npu_cycles_modelled, estimate.vela_estimate_cycles,
        f"SHAPE ONLY (random weights, ExecuTorch's lowering, {layout} input; Vela 5.1.0 "
        f"here): {weights / 1024:.1f} KiB encoded weights", beats,
    )  # fmt: skip


def _delegates(program: Path) -> list:
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    return [i for i in read_delegates(load_program(program)) if i.vela is not None]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, metavar="DIR", default=None,
        help=f"the published networks under their names (default ${DATA_ENV}, else "
        f"{SHARED_DATA} if it exists; docs/npu-timing.md says where to get them)",
    )  # fmt: skip
    parser.add_argument(
        "--shape-only", action="store_true",
        help="also time shape-alike networks (random weights) for anchors without bytes",
    )  # fmt: skip
    parser.add_argument("--top", type=int, default=3, help="operations shown per network")
    args = parser.parse_args(argv)
    data_dir = args.data or default_data_dir()
    if data_dir is not None and not data_dir.is_dir():
        parser.error(f"{data_dir}: no such directory (the published networks' place)")
    rows: list[Row] = []
    absent: list[Anchor] = []
    with tempfile.TemporaryDirectory(prefix="npu-anchors-") as tmp:
        workdir = Path(tmp)
        for anchor in ANCHORS:
            row = Row(anchor, note=anchor.why_untied)
            if anchor.sha256:
                data, where = network_bytes(anchor, find_network(anchor, data_dir))
                if data is not None:
                    row = run_tied(anchor, data, workdir, args.top)
                else:
                    row.note = where
                    absent.append(anchor)
            if row.model is None and anchor.published_vela:
                row.vela = anchor.published_vela
                row.note = f"Vela: the estimate printed with the measurement; {row.note}"
            rows.append(row)
            if row.model is None and args.shape_only and anchor.shape_only:
                rows.append(run_shape_only(anchor))
    print()
    print(f"{'network':34} {'measured':>10} {'model':>12} {'/meas.':>7} {'Vela':>10} "
          f"{'/meas.':>7}  note")  # fmt: skip
    for row in rows:
        print(row.line())
    beat_lines = [line for line in (row.beats_line() for row in rows) if line]
    if beat_lines:
        print("\nAXI data beats (the port's width: U55 8 bytes, U85 16; AXI0 = the U85's SRAM "
              "port), measured vs modelled (ratio):")  # fmt: skip
        print("\n".join(beat_lines))
    if absent:
        place = data_dir or f"a directory given by --data DIR or ${DATA_ENV}"
        print(f"\nBytes not given (or not the published file): put these in {place} under these "
              "names (the .tflite, or its C array source <name>.cpp); the bench checks size and "
              "sha256:")  # fmt: skip
        for anchor in absent:
            print(f"- {anchor.file_name}: {anchor.size:,} bytes, sha256 {anchor.sha256}; "
                  f"from {anchor.bytes_from}")  # fmt: skip
    print()
    for anchor in ANCHORS:
        print(f"- {anchor.name}: {anchor.measured_what}, {anchor.platform}; {anchor.npu}, "
              f"{anchor.system_config}, {anchor.memory_mode}; {anchor.source}")  # fmt: skip


if __name__ == "__main__":
    main()
