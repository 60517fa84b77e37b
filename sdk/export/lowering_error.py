"""A failed NPU lowering as one error line naming what failed, with Vela's output in a log.

`to_edge_transform_and_lower` lowers the partitions one after another; each has its own
artifact folder (`NpuPartitioner(artifact_dir=...)`). A partition whose TOSA was handed to
Vela (`<tag>/out.tosa`) without Vela's result (`<tag>/output/out_vela.npz`) is the one Vela
refused. The error names it and its graph nodes (the ones of the operator type Vela names
first), and keeps beside OUTDIR (OUTDIR itself stays as it was; `lower(failure_logs=...)`
puts them elsewhere):
  <OUTDIR>.vela.log    what failed, the partition's nodes, Vela's flags, everything Vela printed
                       and the traceback;
  <OUTDIR>.vela.tosa   the TOSA flatbuffer Vela refused (to rerun `vela` on it).
"""

from __future__ import annotations

import re
import shutil
import traceback
from pathlib import Path

from sdk.errors import ExportError
from sdk.export.partitioner import NpuPartitioner, PartitionInfo

# What an operator type in Vela's messages (regor's OpType names) comes from in the graph:
# substrings of the aten targets, to point at the likely node(s). A hint, not a proof.
_VELA_OP_SOURCES = {
    "Conv2D": ("convolution",),
    "Conv3D": ("convolution",),
    "DepthwiseConv2D": ("convolution",),
    "TransposeConv2D": ("convolution",),
    "FullyConnected": ("linear", "addmm", "aten.mm"),
    "MatMul": ("bmm", "aten.mm", "matmul"),
    "Add": ("aten.add",),
    "Sub": ("aten.sub",),
    "Mul": ("aten.mul",),
    "AvgPool": ("avg_pool",),
    "MaxPool": ("max_pool",),
    "Table": ("sigmoid", "tanh", "exp", "log", "gelu", "silu", "hardswish", "rsqrt", "erf"),
    "Transpose": ("permute",),
    "Concat": ("cat",),
    "Resize": ("upsample", "interpolate"),
}
_NOT_COMPUTE = ("quantize_per_", "dequantize_per_", "getitem")
_NODES_IN_MESSAGE = 8


def log_paths(outdir: Path, folder: Path | None = None) -> tuple[Path, Path]:
    """(log, tosa) of a failed lowering: beside OUTDIR, or in `folder` when given (sdk deploy
    exports into a cache entry that a failure removes)."""
    folder = outdir.parent if folder is None else folder
    return folder / f"{outdir.name}.vela.log", folder / f"{outdir.name}.vela.tosa"


def remove_stale_logs(outdir: Path, folder: Path | None = None) -> None:
    """A successful export removes an earlier failure's log and TOSA."""
    for path in log_paths(outdir, folder):
        path.unlink(missing_ok=True)


def raised_in_vela(exc: BaseException) -> bool:
    """Did the exception come out of Vela (its Python package or the backend's Vela call)?"""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    for frame in frames:
        path = frame.filename.replace("\\", "/")
        if "/ethosu/vela/" in path or path.endswith("/arm_vela.py"):
            return True
    return False


def failing_partitions(partitioner: NpuPartitioner, artifacts: Path) -> tuple[list[str], bool]:
    """The partitions the failure can be in, and whether Vela was running on them."""
    handed_to_vela, not_compiled = [], []
    for tag in sorted(partitioner.partitions):
        folder = artifacts / tag
        if (folder / "output" / "out_vela.npz").is_file():
            continue
        not_compiled.append(tag)
        if (folder / "out.tosa").is_file():
            handed_to_vela.append(tag)
    if handed_to_vela:
        return handed_to_vela, True
    return not_compiled, False


def compute_nodes(info: PartitionInfo) -> list[tuple[str, str]]:
    return [(n, t) for n, t in info.nodes if not any(s in t for s in _NOT_COMPUTE)]


def vela_op_type(text: str) -> str | None:
    """The operator type a Vela message names ("... (Conv2D) could not run on NPU")."""
    match = re.search(r"\((\w+)\) could not run on NPU", text)
    return match.group(1) if match else None


def likely_nodes(info: PartitionInfo, op_type: str | None) -> list[str]:
    sources = _VELA_OP_SOURCES.get(op_type or "", ())
    return [n for n, t in compute_nodes(info) if any(s in t for s in sources)]


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_NODES_IN_MESSAGE])
    more = len(names) - _NODES_IN_MESSAGE
    return shown + (f" and {more} more (all in the log)" if more > 0 else "")


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def missing_out_variants(exc: BaseException) -> str | None:
    """The error for a CPU op ExecuTorch has no out variant of (no CPU kernel can run it):
    what `to_executorch` raises as "Missing out variants: {'aten::pad'}"."""
    match = re.search(r"Missing out variants: \{(.*?)\}", str(exc))
    if match is None:
        return None
    ops = ", ".join(o.strip().strip("'\"") for o in match.group(1).split(","))
    return (
        f"the program's CPU part calls {ops}, which ExecuTorch has no out variant of (the "
        "form a CPU kernel runs): keep it on the NPU (drop its --cpu-op), or have the model "
        "call the operator it stands for (e.g. torch.constant_pad_nd for F.pad)"
    )


def lowering_error(
    exc: BaseException,
    output: str,
    partitioner: NpuPartitioner,
    artifacts: Path,
    outdir: Path,
    vela_flags: list[str],
    log_folder: Path | None = None,
) -> ExportError:
    """The ExportError for a failed lowering; writes the log (and TOSA) beside OUTDIR (or in
    `log_folder`)."""
    no_out_variant = missing_out_variants(exc)
    if no_out_variant is not None:  # not the NPU's lowering: nothing of Vela's to keep
        return ExportError(no_out_variant)
    last = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "")
    in_vela = isinstance(exc, SystemExit) or raised_in_vela(exc)
    tags, vela_was_running = failing_partitions(partitioner, artifacts)
    # Vela's argument parser exits the same way for every partition: no partition to name.
    named = tags if len(tags) == 1 and not isinstance(exc, SystemExit) else []
    info = partitioner.partitions.get(named[0]) if named else None

    message = "Vela compilation failed" if in_vela else "lowering for the NPU failed"
    if isinstance(exc, SystemExit):
        message += f" (exit {exc.code}): {last}"
    else:
        if info is not None:
            nodes = [n for n, _ in compute_nodes(info)] or [n for n, _ in info.nodes]
            message += f" for NPU partition {info.tag} ({_names(nodes)})"
        message += f": {one_line(exc)}"
    op_type = vela_op_type(str(exc)) or vela_op_type(output)
    suspects = likely_nodes(info, op_type) if info is not None else []
    if suspects:
        message += f"; the {op_type}: {' or '.join(suspects[:_NODES_IN_MESSAGE])}"

    log, tosa = log_paths(outdir, log_folder)
    tosa_written = None
    if info is not None and vela_was_running:
        try:
            tosa.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(artifacts / info.tag / "out.tosa", tosa)
            tosa_written = tosa
        except OSError:
            tosa_written = None
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(
            _log_text(message, exc, output, info, tags, vela_flags, tosa_written),
            encoding="utf-8",
        )
    except OSError:
        return ExportError(message)
    return ExportError(message, log_path=log)


def _log_text(
    message: str,
    exc: BaseException,
    output: str,
    info: PartitionInfo | None,
    tags: list[str],
    vela_flags: list[str],
    tosa: Path | None,
) -> str:
    lines = [f"error: {message}", ""]
    if info is not None:
        lines.append(f"NPU partition {info.tag}: {len(info.nodes)} graph node(s)")
        lines += [f"  {name}  [{target}]" for name, target in info.nodes]
        lines += [f"  input  {t.node}: {t.dtype} {list(t.shape)}" for t in info.inputs]
        lines += [f"  output {t.node}: {t.dtype} {list(t.shape)}" for t in info.outputs]
    elif tags:
        lines.append("the failure is in one of the NPU partitions " + ", ".join(tags))
    lines.append("")
    lines.append("Vela flags: " + " ".join(vela_flags))
    if tosa is not None:
        lines.append(f"the TOSA Vela was given: {tosa}")
        lines.append(f"  rerun: vela {' '.join(vela_flags)} {tosa}")
    lines += ["", "---- what Vela (and the lowering) printed ----", output.rstrip(), ""]
    lines.append("---- traceback ----")
    lines.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
    return "\n".join(lines) + "\n"
