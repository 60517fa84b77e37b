"""`sdk export` as Python: model -> quantized graph -> partitioned, Vela-compiled `.pte`.

The steps are separate functions so a user (or a test) can stop in between:
    loaded = load_model("model.py")
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT16)
    result = lower(quantized, "out/", cpu_ops=["aten.bmm"])
`export_model` chains them. Output (OUTDIR): model.pte, report.json, tosa/delegate_<i>.tosa and
example_inputs.npz (the model's example inputs in program order as the program takes them:
quantized with `io="int"`, for `sdk run --inputs`).
Everything is written to a staging folder first and moved into OUTDIR only on success, so a
failed export leaves OUTDIR as it was.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from io import StringIO
from pathlib import Path
from typing import Any

import torch

from sdk.errors import BoundaryError, ExportError, SdkError, StorageError
from sdk.ethosu.config import NpuConfig, QuantMode, compile_spec
from sdk.export import ETRECORD_FILE
from sdk.export.aten_rewrites import outside_core_aten, rewrite_float_graph
from sdk.export.calibration import (
    FROM_EXAMPLE,
    FROM_MODEL,
    Progress,
    observed_ranges,
    progress_text,
    read_calibration,
)
from sdk.export.cpu_ops import ForceOnCpu, RankZeroFromRanked
from sdk.export.edge_rewrites import keep_long_indices
from sdk.export.integer_io import integer_io
from sdk.export.lowering_error import lowering_error, one_line, remove_stale_logs
from sdk.export.model_loader import LoadedModel, load_model
from sdk.export.partitioner import NpuPartitioner
from sdk.export.quant_options import QuantOptions
from sdk.export.report import build_report, cpu_nodes
from sdk.export.tosa_passes import sdk_tosa_passes
from sdk.export.vela_summary import read_vela_summary
from sdk.program.audit import audit_program, npu_output_overlaps, npu_stuck_matmul_operands
from sdk.program.integer_io import check_io
from sdk.program.io_header import IO_HEADER_FILE, render_io_header
from sdk.program.layout import AS_MODEL, check_input_layout, laid_out
from sdk.program.pte import load_program
from sdk.program.tosa_file import read_tosa_io, tosa_call_mismatch
from sdk.utils.npz import write_arrays

PROGRAM_FILE = "model.pte"
REPORT_FILE = "report.json"
TOSA_DIR = "tosa"
INPUTS_FILE = "example_inputs.npz"
_DEBUG_ARTIFACT_KEY = "debug_artifact_path"

log = logging.getLogger(__name__)


@dataclass
class QuantizedModel:
    """The model after PT2E quantization: the reference the exported program must match."""

    loaded: LoadedModel
    npu: NpuConfig
    quant: QuantMode
    graph_module: torch.fx.GraphModule  # run it for the quantized PyTorch reference
    exported: torch.export.ExportedProgram
    vela_args: list[str] = field(default_factory=list)
    # The fp32 model as torch.export saw it (before quantization): its graph says which outputs
    # are concatenations (sdk.evaluation.numerics.concat_collapses), without exporting again.
    fp32_exported: torch.export.ExportedProgram | None = None
    options: QuantOptions = field(default_factory=QuantOptions)
    module_matches: list[dict] = field(default_factory=list)  # QuantOptions.apply's
    # (Vela ini, section) of the board's NPU memories (sdk.ethosu.memories.VelaMemory.spec);
    # None: ExecuTorch's default Vela configuration.
    memories: tuple[str, str] | None = None
    input_layout: str = AS_MODEL  # the program's 4-D inputs channels-last or not (--input-layout)
    # The samples' source and count and each activation observer's range (sdk.export.calibration).
    calibration: dict = field(default_factory=dict)

    @property
    def quantization(self) -> dict:
        """The report's `quantization`: the settings, each module one with what it matched, and
        what calibrated the model."""
        return self.options.to_json() | {
            "modules": self.module_matches,
            "calibration": self.calibration,
        }


@dataclass
class ExportResult:
    outdir: Path
    program_path: Path
    report_path: Path
    report: dict
    tosa_paths: list[Path]


def quantize(
    loaded: LoadedModel,
    npu: NpuConfig,
    quant: QuantMode,
    calibration: list[tuple[torch.Tensor, ...]] | None = None,
    vela_args: list[str] | None = None,
    options: QuantOptions | None = None,
    memories: tuple[str, str] | None = None,
    input_layout: str = AS_MODEL,
    *,
    calibration_from: str = "given samples",
    progress: Progress | None = None,
) -> QuantizedModel:
    """PT2E-quantize with ExecuTorch's EthosUQuantizer (INT8 symmetric or INT16 a16w8), with
    `options`' weight, I/O and per-module settings (sdk.export.quant_options). `vela_args` and
    `memories` (compile_spec's) are kept for the lowering. `input_layout` channels-last: the
    model is exported from channels-last 4-D inputs, so the program takes them so (dim order
    0, 2, 3, 1) and the NPU needs no transpose at its inputs (sdk.program.layout).
    `calibration_from`: what `calibration` was read from (the report's calibration `source`);
    `progress` is told each calibrated sample (a long calibration on a terminal)."""
    from executorch.backends.arm.quantizer import EthosUQuantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = compile_spec(npu, vela_args, memories)
    options = options or QuantOptions()
    check_input_layout(input_layout)
    source = calibration_from if calibration else FROM_MODEL if loaded.calibration else FROM_EXAMPLE
    samples = [
        tuple(laid_out(t, input_layout) for t in sample)
        for sample in calibration or loaded.calibration or [loaded.example_inputs]
    ]
    example = tuple(laid_out(t, input_layout) for t in loaded.example_inputs)
    try:
        fp32_exported = torch.export.export(loaded.module, example)
        graph = fp32_exported.module(check_guards=False)
        rewrite_float_graph(graph)
        nested = _nested_cond(graph)
        if nested is not None:
            raise ExportError(
                f"{loaded.name}: node {nested}: a torch.cond inside a torch.cond branch, which "
                "torchao's convert_pt2e (DuplicateDQPass) cannot quantize; compute the inner "
                "condition outside the branch (one level of torch.cond)"
            )
        quantizer = EthosUQuantizer(spec)
        matched = options.apply(quantizer, quant, loaded.module)
        prepared = prepare_pt2e(graph, quantizer)
        with torch.no_grad():
            for done, sample in enumerate(samples, 1):
                try:
                    prepared(*sample)
                except Exception as exc:
                    named = _calibration_error(loaded.name, fp32_exported, samples)
                    if named is None:
                        raise
                    raise named from exc
                if progress is not None:
                    progress(progress_text(done, len(samples)))
        ranges = observed_ranges(prepared)  # convert_pt2e replaces the observers
        converted = convert_pt2e(prepared)
        exported = torch.export.export(converted, example)
    except SdkError:
        raise
    except Exception as exc:
        raise ExportError(f"{loaded.name}: export/quantization failed: {one_line(exc)}") from exc
    return QuantizedModel(
        loaded, npu, quant, converted, exported, list(vela_args or []), fp32_exported, options,
        matched, memories, input_layout,
        {"source": source, "samples": len(samples), "ranges": ranges},
    )  # fmt: skip


def _calibration_error(
    name: str, fp32: torch.export.ExportedProgram, samples: list[tuple[torch.Tensor, ...]]
) -> ExportError | None:
    """Calibration failed: if a node of the float model made NaN (else Inf) from finite inputs
    (acosh of 0, a log of a negative), the observers got no range; name that node, not the
    observer's complaint. None when every node stays finite (the failure is something else)."""
    for kind, bad in (("NaN", torch.isnan), ("Inf", torch.isinf)):
        for index, sample in enumerate(samples):
            node = _first_node_producing(fp32.module(check_guards=False), sample, bad)
            if node is not None:
                return ExportError(
                    f"{name}: calibration sample {index}: node {node.name} "
                    f"({node.target}) produces {kind}, so its quantization range is "
                    "not finite: keep the operator's inputs in its domain in the model (e.g. "
                    "clamp them), or calibrate with inputs for which it stays finite"
                )
    return None


def _nested_cond(module: torch.fx.GraphModule) -> str | None:
    """The name of a torch.cond node inside a torch.cond branch, if there is one."""

    def conds(graph_module: torch.fx.GraphModule) -> list[torch.fx.Node]:
        return [n for n in graph_module.graph.nodes if n.target is torch.ops.higher_order.cond]

    for outer in conds(module):
        for branch in outer.args[1:3]:
            inner = getattr(module, str(getattr(branch, "target", "")), None)
            if isinstance(inner, torch.fx.GraphModule) and conds(inner):
                return f"{conds(inner)[0].name} (in {outer.name})"
    return None


def _first_node_producing(
    module: torch.fx.GraphModule,
    sample: tuple[torch.Tensor, ...],
    bad: Callable[[torch.Tensor], torch.Tensor],
) -> torch.fx.Node | None:
    """The first call in graph order whose tensor output has an element `bad` holds for."""
    found: list[torch.fx.Node] = []

    class _Watch(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            out = super().run_node(n)
            values = out if isinstance(out, (list, tuple)) else [out]
            if not found and n.op == "call_function":
                for v in values:
                    if isinstance(v, torch.Tensor) and v.is_floating_point() and bad(v).any():
                        found.append(n)
                        break
            return out

    # A node that raises is not one that made NaN before it: stop there.
    with torch.no_grad(), contextlib.suppress(Exception):
        _Watch(module).run(*sample)
    return found[0] if found else None


@contextlib.contextmanager
def _staging(outdir: Path):
    """A fresh folder beside OUTDIR; its files replace OUTDIR's only if the body succeeds."""
    parent = outdir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{outdir}: cannot create the output folder: {exc}") from exc
    stage = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.staging-", dir=parent))
    try:
        yield stage
        outdir.mkdir(exist_ok=True)
        for name in (
            PROGRAM_FILE,
            REPORT_FILE,
            TOSA_DIR,
            INPUTS_FILE,
            ETRECORD_FILE,
            IO_HEADER_FILE,
        ):
            target = outdir / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            if (stage / name).exists():  # the ETRecord only when asked for
                (stage / name).rename(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write_etrecord(path: Path, edge, manager) -> None:
    """ExecuTorch's ETRecord for its Inspector: best effort (the program stands without it; a
    failure is logged, never a failed export)."""
    from executorch.devtools import generate_etrecord

    try:
        generate_etrecord(path, edge, manager)
    except Exception as exc:  # ExecuTorch's own failure, whatever it is
        path.unlink(missing_ok=True)
        logging.getLogger(__name__).warning("no ETRecord written: %s", one_line(exc))


def _lowered_modules(edge) -> list:
    """The edge graph's lowered delegate modules in call order (= the program's delegate order)."""
    module = edge.exported_program().graph_module
    lowered = []
    for node in module.graph.nodes:
        if node.op == "call_function" and "executorch_call_delegate" in str(node.target):
            lowered.append(getattr(module, node.args[0].target))
    return lowered


def _partition_tag(lowered) -> str | None:
    """The partition a lowered module was made from: its operators' tag. Not a placeholder's:
    an input that another delegate's output feeds carries that delegate's tag in its meta."""
    for node in lowered.original_module.graph.nodes:
        tag = node.meta.get("delegation_tag")
        if tag and node.op == "call_function":
            return tag
    return None


def _indices_by_payload(delegates: list) -> dict[str, list[int]]:
    """Each payload digest's delegate indices, ascending. A digest is not a delegate's name:
    two partitions of a model's repeated blocks compile to the same bytes, and keyed by digest
    alone one of them would get no TOSA (and the other's twice)."""
    found: dict[str, list[int]] = {}
    for info in sorted(delegates, key=lambda d: d.index):
        found.setdefault(info.sha256, []).append(info.index)
    return found


class _OverlappingNpuOutputs(Exception):
    """Vela miscompiled a MatMul (found before OUTDIR is written): operations whose OFM
    overlaps itself, or (`stuck`) a batched MatMul whose first operand stays at batch 0."""

    def __init__(self, found: list[str], npu_bmm: bool, stuck: bool = False) -> None:
        super().__init__("; ".join(found))
        self.found = found
        self.npu_bmm = npu_bmm  # a bmm ran in a delegate: the known cause can be avoided
        self.stuck = stuck

    @property
    def why(self) -> str:
        """The workaround's reason (report.json `vela_workarounds`)."""
        from sdk.ethosu.functional.execute import MISCOMPILED_MATMUL, STUCK_OPERAND_MATMUL

        return STUCK_OPERAND_MATMUL if self.stuck else MISCOMPILED_MATMUL

    @property
    def what(self) -> str:
        """What Vela compiled, for an export that cannot avoid it."""
        if self.stuck:
            return (
                "Vela compiled a batched MatMul that multiplies every batch by batch 0's "
                "first operand (the device would compute another result than the model)"
            )
        return (
            "Vela compiled NPU operations whose outputs overlap themselves (the device would "
            "leave its write order, not the model's result)"
        )


BMM = "aten.bmm.default"

# Operators ExecuTorch 1.5.1 lowers for the Ethos-U55 into something else than the model's
# operator: the SDK keeps them on the CPU (report.json `lowering_workarounds`).
_WRONG_ON_U55 = {
    "aten.bitwise_right_shift.Tensor": (
        "ExecuTorch 1.5.1 lowers it for the Ethos-U55 to a rounding TOSA ARITHMETIC_RIGHT_SHIFT "
        "(the only one the U55 has; MLETORCH-525): 27 >> 1 would give 14, not 13"
    ),
}


def wrong_on_the_npu(quantized: QuantizedModel, cpu_ops: list[str]) -> list[dict]:
    """The graph's operators in _WRONG_ON_U55 (on a U55) that `cpu_ops` (the user's --cpu-op)
    does not already keep on the CPU: {cpu_op, why, found (its nodes)}."""
    if not quantized.npu.value.startswith("ethos-u55"):
        return []
    forced = ForceOnCpu(cpu_ops).names
    found: dict[str, list[str]] = {}
    for node in quantized.exported.graph.nodes:
        op = str(node.target)  # "aten.bitwise_right_shift.Tensor", as --cpu-op spells it
        if op in _WRONG_ON_U55 and not {op, op.rsplit(".", 1)[0]} & forced:
            found.setdefault(op, []).append(node.name)
    return [{"cpu_op": op, "why": _WRONG_ON_U55[op], "found": names} for op, names in found.items()]


def lower(
    quantized: QuantizedModel,
    outdir: Path | str,
    *,
    cpu_ops: list[str] | None = None,
    fix_boundaries: bool = True,
    tosa_passes: bool = True,
    failure_logs: Path | None = None,
    etrecord: bool = False,
    io: str = "float",
) -> ExportResult:
    """Partition for the NPU, compile with Vela, write model.pte, report.json and the TOSA
    (and `etrecord.bin`, ExecuTorch's ETRecord for its Inspector, when `etrecord`).

    `fix_boundaries=False`: ExecuTorch's partitioner as it is; `tosa_passes=False`: without
    the SDK's own TOSA passes (`sdk.export.tosa_passes`). Both are there for comparison.
    A failed lowering raises an ExportError naming the partition and its nodes, with Vela's
    output in a log beside OUTDIR, or in the folder `failure_logs` (`sdk.export.lowering_error`).

    Vela 5.1.0 miscompiles an Ethos-U55 MatMul whose first operand is a slice into operations
    whose outputs overlap themselves (sdk.ethosu.functional.execute.OVERLAP_CAUSE), and a
    batched one run batch by batch (attention's q @ k^T of a fused qkv) into MUL + REDUCE_SUM
    pairs that read batch 0's first operand for every batch (STUCK_OPERAND_MATMUL): such a
    program gives the wrong
    result on the device and is never written. The SDK lowers again with the bmm on the CPU
    and says so in the report (`vela_workarounds`); with no bmm to move, the export fails
    naming the operations. The stock partitioner's export only reports them
    (`npu_output_overlaps`, `npu_stuck_matmul_operands`).

    An operator ExecuTorch lowers for the U55 into a different one (_WRONG_ON_U55) stays on
    the CPU from the start, in the report's `lowering_workarounds`.

    `io="int"`: the program takes and returns the quantized integers (sdk.export.integer_io);
    the report's `io` section holds each one's scale and zero-point.
    """
    check_io(io)
    cpu_ops = list(cpu_ops or [])
    placed = wrong_on_the_npu(quantized, cpu_ops)
    cpu_ops += [p["cpu_op"] for p in placed]
    args = (
        quantized, Path(outdir), fix_boundaries, tosa_passes, failure_logs, placed, etrecord, io,
    )  # fmt: skip
    key = _lowering_key(quantized, cpu_ops, fix_boundaries, tosa_passes, io)
    workaround = _MISCOMPILED_BMM.get(key)
    if workaround is None:
        try:
            return _lower_once(*args, cpu_ops, [])
        except _OverlappingNpuOutputs as exc:
            if not exc.npu_bmm:
                raise ExportError(f"{exc.what}: {exc}") from None
            workaround = {
                "cpu_op": BMM,
                "why": exc.why,
                "found": exc.found,
            }
    try:
        result = _lower_once(*args, [*cpu_ops, BMM], [workaround])
        _MISCOMPILED_BMM[key] = workaround  # only a retry that held
        return result
    except _OverlappingNpuOutputs as exc:
        raise ExportError(f"{exc.what}, even with {BMM} on the CPU: {exc}") from None


# The graphs whose first lowering Vela miscompiled (the bmm workaround above), by
# _lowering_key: this process lowers them again with the bmm on the CPU straight away, the
# same program and report the retry gave (its own overlap check still runs). `sdk tune`, a
# zoo and a test session lower one graph many times; a lowering costs tens of seconds.
_MISCOMPILED_BMM: dict[str, dict] = {}


def _lowering_key(
    quantized: QuantizedModel, cpu_ops: list[str], fix_boundaries: bool, tosa_passes: bool, io: str
) -> str:
    """What decides a lowering: the quantized graph (its code holds every operator, argument
    and quantization parameter; the shapes and dtypes from each node's value), the weights,
    the compile spec and the options."""
    digest = hashlib.sha256()
    exported = quantized.exported
    digest.update(exported.graph_module.code.encode())
    for node in exported.graph.nodes:
        value = node.meta.get("val")
        digest.update(
            f"{node.name}:{getattr(value, 'shape', '')}:{getattr(value, 'dtype', '')}".encode()
        )
    for name, tensor in sorted({**exported.state_dict, **exported.constants}.items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    spec = compile_spec(quantized.npu, quantized.vela_args, quantized.memories)
    options = (spec.compiler_flags, sorted(cpu_ops), fix_boundaries, tosa_passes, io)
    digest.update(repr((*options, quantized.input_layout)).encode())
    return digest.hexdigest()


# The edge programs of the current `shared_edge_programs` block, by `_edge_key`: (the quantized
# graph module, kept so its id is not reused, and the edge program before any backend ran).
_SHARED_EDGE: ContextVar[dict[tuple, tuple[Any, Any]] | None] = ContextVar("edge", default=None)


@contextlib.contextmanager
def shared_edge_programs() -> Iterator[None]:
    """Within the block (one tuning), the lowerings of one quantized graph (one
    QuantizedModel.graph_module) with one partitioning (--cpu-op, the boundary fix) share its
    edge program: ExecuTorch's decomposition to the edge dialect, before the backend runs,
    which no Vela flag and no --io changes. Each lowering lowers a copy of it."""
    if _SHARED_EDGE.get() is not None:
        yield
        return
    token = _SHARED_EDGE.set({})
    try:
        yield
    finally:
        _SHARED_EDGE.reset(token)


def _edge_key(
    quantized: QuantizedModel, partitioner: NpuPartitioner, cpu_ops: list[str], fix_boundaries: bool
) -> tuple:
    """What an edge program is a function of besides the graph: the NPU (its TOSA profile
    decides the operators kept whole), the operators forced on the CPU and the partitioner."""
    return (
        id(quantized.graph_module), quantized.npu.value, quantized.input_layout,
        tuple(sorted(cpu_ops)), fix_boundaries, type(partitioner).__name__,
    )  # fmt: skip


def _to_edge_and_lower(
    quantized: QuantizedModel, partitioner: NpuPartitioner, cpu_ops: list[str], fix_boundaries: bool
) -> Any:
    """ExecuTorch's to_edge_transform_and_lower of the quantized graph; in a
    `shared_edge_programs` block, its two halves: the edge program (made once per graph and
    partitioning, copied) and the backend's lowering with this partitioner, then the same
    checks of the preserved operators."""
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from executorch.exir.program import _program as et

    def config() -> EdgeCompileConfig:
        return EdgeCompileConfig(
            _core_aten_ops_exception_list=outside_core_aten(quantized.exported.graph)
        )

    shared = _SHARED_EDGE.get()
    if shared is None:
        return to_edge_transform_and_lower(
            quantized.exported, partitioner=[partitioner], compile_config=config()
        )
    key = _edge_key(quantized, partitioner, cpu_ops, fix_boundaries)
    if key not in shared:
        made = et._gen_edge_manager_for_partitioners(
            {"forward": [partitioner]}, {"forward": quantized.exported}, config(), None
        )
        shared[key] = (quantized.graph_module, made)
    else:  # what making it does to a partitioner (its compile spec takes the pass pipeline's
        # configuration, which the delegate records): this one too, the program left unused
        partitioner.transform_for_pre_decomposition(quantized.exported)
    edge = copy.deepcopy(shared[key][1]).to_backend({"forward": partitioner})
    program = edge.exported_program()
    ops, check_op_support = partitioner.ops_to_not_decompose(program)
    if not et._can_skip_using_EDGE_DO_NOT_DECOMP(partitioner, program):
        ops = et._remove_invalid_ops_for_not_decompose(ops)
    et._sanity_check_graph_for_non_decomp_ops(
        "forward", program, set(ops), check_op_support,
        partitioner_name=type(partitioner).__name__, generate_error=True,
    )  # fmt: skip
    if edge.compile_config._check_ir_validity:
        et.EXIREdgeDialectVerifier(
            edge_compile_config=edge.compile_config, class_only=True,
            preserve_ops=edge.compile_config.preserve_ops + list(ops),
        )()(program.graph_module)  # fmt: skip
    return edge


def _lower_once(
    quantized: QuantizedModel,
    outdir: Path,
    fix_boundaries: bool,
    tosa_passes: bool,
    failure_logs: Path | None,
    placed: list[dict],
    etrecord: bool,
    io: str,
    cpu_ops: list[str],
    workarounds: list[dict],
) -> ExportResult:
    """One lowering (see `lower`); raises _OverlappingNpuOutputs before writing OUTDIR."""
    spec = compile_spec(quantized.npu, quantized.vela_args, quantized.memories)
    forced = ForceOnCpu(cpu_ops) if cpu_ops else None
    checks = [RankZeroFromRanked(), *([forced] if forced else [])]
    with _staging(outdir) as stage:
        artifacts = stage / "artifacts"
        partitioner = NpuPartitioner(
            spec, checks, fix_boundaries=fix_boundaries, artifact_dir=artifacts
        )
        vela_log = StringIO()
        try:
            with (
                contextlib.redirect_stdout(vela_log),
                contextlib.redirect_stderr(vela_log),
                sdk_tosa_passes(tosa_passes) as narrow,
            ):
                edge = _to_edge_and_lower(quantized, partitioner, cpu_ops, fix_boundaries)
                keep_long_indices(edge.exported_program().graph_module)
                io_section = replace(integer_io(edge, io), input_layout=quantized.input_layout)
                lowered = _lowered_modules(edge)
                if forced is not None:
                    forced.check_matches(
                        [edge.exported_program().graph_module]
                        + [m.original_module.graph_module for m in lowered]
                    )
                for module in lowered:
                    # The artifact path is a build detail: keep it out of the program.
                    module._compile_specs = [
                        s for s in module.compile_specs if s.key != _DEBUG_ARTIFACT_KEY
                    ]
                cpu_node_list = cpu_nodes(
                    edge.exported_program().graph_module, partitioner, cpu_ops or []
                )
                edge_copy = copy.deepcopy(edge) if etrecord else None  # to_executorch changes it
                manager = edge.to_executorch()
                program_bytes = manager.buffer
                if edge_copy is not None:
                    _write_etrecord(stage / ETRECORD_FILE, edge_copy, manager)
        except SdkError:
            raise
        except (Exception, SystemExit) as exc:
            raise lowering_error(
                exc,
                vela_log.getvalue(),
                partitioner,
                artifacts,
                outdir,
                spec.compiler_flags,
                failure_logs,
            ) from exc
        (stage / PROGRAM_FILE).write_bytes(program_bytes)
        program = load_program(program_bytes)  # the bytes in hand, not read back
        audit = audit_program(program)
        unused = _indices_by_payload(audit.delegates)
        call_args = {
            c.delegate_index: [int(a) for a in c.args] for _, c in program.delegate_calls()
        }
        (stage / TOSA_DIR).mkdir()
        delegates = []
        for module in lowered:
            tag = _partition_tag(module)
            digest = hashlib.sha256(module.processed_bytes).hexdigest()
            # Identical partitions (a model's repeated blocks) compile to byte-identical
            # payloads: each lowered module, in call order, takes the next delegate of its digest.
            same = unused.get(digest)
            index = same.pop(0) if same else None
            if tag is None or index is None:
                raise ExportError("internal: a lowered module does not match any program delegate")
            # Each partition dumps into its own folder (NpuPartitioner._delegation_spec); the
            # backend names the file output_<tag>_<spec>.tosa, or output_<spec>.tosa when the
            # partition is the whole graph.
            tosa_files = sorted((artifacts / tag).glob("output_*.tosa"))
            if len(tosa_files) != 1:
                raise ExportError(
                    f"internal: partition {tag} dumped {len(tosa_files)} TOSA files, not 1"
                )
            tosa_rel = Path(TOSA_DIR) / f"delegate_{index}.tosa"
            shutil.copyfile(tosa_files[0], stage / tosa_rel)
            graph = read_tosa_io((stage / tosa_rel).read_bytes())
            mismatch = tosa_call_mismatch(program, call_args[index], graph)
            if mismatch:  # the host reference would run another partition's graph
                raise ExportError(f"internal: delegate {index} (partition {tag}): {mismatch}")
            delegates.append(
                {
                    "index": index,
                    "tag": tag,
                    "tosa": tosa_rel.as_posix(),
                    "vela_estimate": read_vela_summary(artifacts / tag / "output"),
                }
            )
        left = sorted(i for indices in unused.values() for i in indices)
        if left:  # a delegate no lowered module matched would have no TOSA to check it by
            raise ExportError(f"internal: no lowered module matches delegate(s) {left}")
        delegates.sort(key=lambda d: d["index"])
        report = build_report(
            quantized,
            partitioner,
            cpu_node_list,
            program,
            audit,
            delegates,
            cpu_ops or [],
            io_section,
            narrow.forks,
        )
        if fix_boundaries and not audit.ok:
            # The program would make the NPU and the CPU read one buffer differently: the
            # export fails, naming each delegate and tensor (never written to OUTDIR).
            raise BoundaryError(
                "the exported program fails the boundary audit: " + "; ".join(audit.problems)
            )
        overlaps = npu_output_overlaps(program)
        stuck = [] if overlaps else npu_stuck_matmul_operands(program)
        if fix_boundaries and (overlaps or stuck):
            bmm = ForceOnCpu([BMM])  # the --cpu-op matcher: does a delegate hold a bmm?
            npu_bmm = any(
                not bmm.is_node_supported({}, n)
                for m in lowered
                for n in m.original_module.graph_module.graph.nodes
            )
            raise _OverlappingNpuOutputs(overlaps or stuck, npu_bmm, stuck=not overlaps)
        report["npu_output_overlaps"] = overlaps
        report["npu_stuck_matmul_operands"] = stuck
        report["vela_workarounds"] = workarounds
        report["lowering_workarounds"] = placed
        for workaround in workarounds + placed:  # the SDK's choice, not the user's --cpu-op
            report["cpu_ops_forced"].remove(workaround["cpu_op"])
            for node in report["cpu_nodes"]:
                if node["target"] == workaround["cpu_op"]:
                    node["reason"] = f"moved onto the CPU by the SDK: {workaround['why']}"
        # No NPU partition, no Vela run: the folder was never made (a CPU-only program).
        shutil.rmtree(artifacts, ignore_errors=True)
        example = [t.numpy() for t in quantized.loaded.example_inputs]
        write_arrays(stage / INPUTS_FILE, io_section.quantize_inputs(example))
        (stage / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
        loaded = quantized.loaded
        header = render_io_header(program, io_section, f"{loaded.path.name}:{loaded.name}")
        (stage / IO_HEADER_FILE).write_text(header)
    remove_stale_logs(outdir, failure_logs)
    return ExportResult(
        outdir=outdir,
        program_path=outdir / PROGRAM_FILE,
        report_path=outdir / REPORT_FILE,
        report=report,
        tosa_paths=[outdir / d["tosa"] for d in delegates],
    )


def export_model(
    model: str,
    outdir: Path | str,
    *,
    npu: NpuConfig | str = NpuConfig.U55_128,
    quant: QuantMode | str = QuantMode.INT8,
    cpu_ops: list[str] | None = None,
    calibration: Path | str | None = None,
    vela_args: list[str] | None = None,
    fix_boundaries: bool = True,
    tosa_passes: bool = True,
    quant_options: QuantOptions | None = None,
    etrecord: bool = False,
    io: str = "float",
    memories: tuple[str, str] | None = None,
    input_layout: str = AS_MODEL,
    progress: Progress | None = None,
) -> ExportResult:
    """Load MODEL (file.py[:Name]), quantize (`quant_options`: sdk.export.quant_options), lower
    and write OUTDIR (`io="int"`: a program with integer inputs and outputs, see `lower`;
    `memories`: the board's Vela ini and section, sdk.ethosu.memories.VelaMemory.spec;
    `input_layout`, `progress`: see `quantize`; `calibration`: a .npz or a folder of images,
    sdk.export.calibration)."""
    check_io(io)
    check_input_layout(input_layout)
    npu = npu if isinstance(npu, NpuConfig) else NpuConfig.parse(npu)
    quant = quant if isinstance(quant, QuantMode) else QuantMode.parse(quant)
    loaded = load_model(model)
    samples = read_calibration(Path(calibration), loaded.example_inputs) if calibration else None
    quantized = quantize(
        loaded, npu, quant, samples, vela_args, quant_options, memories, input_layout,
        calibration_from=str(calibration), progress=progress,
    )  # fmt: skip
    return lower(
        quantized,
        outdir,
        cpu_ops=cpu_ops,
        fix_boundaries=fix_boundaries,
        tosa_passes=tosa_passes,
        etrecord=etrecord,
        io=io,
    )
