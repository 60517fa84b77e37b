"""report.json: what `sdk export` did, as data (fields documented in the README)."""

from __future__ import annotations

import hashlib
import operator
from typing import TYPE_CHECKING

from executorch.backends.arm.constants import DQ_OPS, Q_OPS

from sdk.evaluation.numerics import export_numerics
from sdk.export.partitioner import BoundaryTensor, NpuPartitioner, target_name
from sdk.export.vela_summary import ESTIMATE_LABEL
from sdk.program.audit import AuditResult
from sdk.program.integer_io import IoSection
from sdk.program.pte import LoadedProgram

if TYPE_CHECKING:
    from sdk.export.pipeline import QuantizedModel
    from sdk.export.tosa_passes import Int48Fork

REPORT_SCHEMA = "sdk.export.report/2"


def _graph_tensor(t: BoundaryTensor) -> dict:
    return {"node": t.node, "dtype": t.dtype, "shape": list(t.shape)}


def cpu_nodes(graph_module, partitioner: NpuPartitioner, cpu_ops: list[str]) -> list[dict]:
    """Every operator left on the CPU after lowering, with why it is not on the NPU."""
    removed = {r.node: r.reason for r in partitioner.removals}
    forced = None
    if cpu_ops:
        from sdk.export.cpu_ops import ForceOnCpu

        forced = ForceOnCpu(cpu_ops)
    nodes = []
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if "executorch_call_delegate" in str(node.target):
            continue
        if forced is not None and forced.matches(node):
            reason = "forced onto the CPU by --cpu-op"
        elif node.name in removed:
            reason = "taken out of an NPU partition: " + removed[node.name]
        elif node.name in partitioner.rejected:
            reason = partitioner.rejected[node.name]
        elif node.target in (*Q_OPS, *DQ_OPS):
            reason = "quantize/dequantize at an NPU partition boundary"
        else:
            reason = "not claimed by any NPU partition"
        nodes.append({"name": node.name, "target": target_name(node), "reason": reason})
    return nodes


def _tosa_rewrite(fork: Int48Fork, partitioner: NpuPartitioner) -> dict:
    """One entry of `tosa_rewrites`: what an SDK TOSA pass did to which graph node."""
    partition = partitioner.partitions.get(fork.partition or "")
    names = partition.handles.get(fork.debug_handle, []) if partition else []
    targets = dict(partition.nodes) if partition else {}
    convolutions = [n for n in names if "convolution" in targets.get(n, "")]
    node = (convolutions or names or [None])[0]
    entry = {
        "pass": "NarrowInt48ForksPass",
        "node": node or fork.tosa_node,
        "partition": fork.partition,
        "rewritten": fork.rewritten,
        "rescales_moved": len(fork.consumers),
    }
    if fork.rewritten:
        entry["what"] = (
            "the INT16 convolution's INT48 accumulator had several rescales (Vela fuses one "
            "only when it is the sole reader): the INT32 consumers now rescale its INT16 output"
        )
        if fork.note:
            entry["what"] += f"; {fork.note}"
    else:
        entry["what"] = fork.note
    return entry


def _totals(delegates: list[dict]) -> dict:
    estimates = [d["vela_estimate"] for d in delegates if d.get("vela_estimate")]

    def total(key: str) -> float | None:
        values = [e[key] for e in estimates if e.get(key) is not None]
        return sum(values) if values else None

    return {
        "label": ESTIMATE_LABEL,
        "sram_used_kib_max": max((e["sram_used_kib"] or 0 for e in estimates), default=None),
        "flash_used_kib": total("flash_used_kib"),
        "npu_cycles": total("npu_cycles"),
        "total_cycles": total("total_cycles"),
        "macs": total("macs"),
    }


def build_report(
    quantized: QuantizedModel,
    partitioner: NpuPartitioner,
    cpu_node_list: list[dict],
    program: LoadedProgram,
    audit: AuditResult,
    delegates: list[dict],
    cpu_ops: list[str],
    io: IoSection | None = None,
    int48_forks: list[Int48Fork] | None = None,
) -> dict:
    """The report of a lowered program (`io`: its I/O mode and quantization)."""
    io = io or IoSection("float")
    sites = {site.delegate_index: site for site in audit.call_sites}
    delegate_entries = []
    for entry in delegates:
        info = audit.delegates[entry["index"]]
        partition = partitioner.partitions.get(entry["tag"])
        site = sites.get(entry["index"])
        checks = site.checks if site else []
        graph_in = partition.inputs if partition else []
        graph_out = partition.outputs if partition else []
        ins = [c for c in checks if c.direction == "input"]
        outs = [c for c in checks if c.direction == "output"]
        delegate_entries.append(
            {
                "index": entry["index"],
                "partition": entry["tag"],
                "backend": info.backend,
                "payload_bytes": len(info.payload),
                "payload_sha256": info.sha256,
                "tosa": entry["tosa"],
                "nodes": [
                    {"name": n, "target": t} for n, t in (partition.nodes if partition else [])
                ],
                # Graph-side boundary tensors are listed in graph order; the program's call
                # site order is authoritative for inputs/outputs below.
                "graph_inputs": [_graph_tensor(t) for t in graph_in],
                "graph_outputs": [_graph_tensor(t) for t in graph_out],
                "inputs": [c.to_json() for c in ins],
                "outputs": [c.to_json() for c in outs],
                "scratch_bytes": info.vela.scratch_size if info.vela else None,
                "vela_estimate": entry["vela_estimate"],
            }
        )
    loaded = quantized.loaded
    return {
        "schema": REPORT_SCHEMA,
        "model": {
            "name": loaded.name,
            "path": str(loaded.path),
            "inputs": [
                {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
                for t in loaded.example_inputs
            ],
        },
        "npu": quantized.npu.value,
        # --io: float, or the program takes and returns integers with these scales/zero-points
        "io": io.to_json(),
        "quant": quantized.quant.value,
        "quantization": quantized.quantization,
        "partitioner": "int-boundary" if partitioner.fix_boundaries else "stock",
        "cpu_ops_forced": list(cpu_ops),
        "vela_args": list(quantized.vela_args),
        # The board's Vela system config / memory mode (None: ExecuTorch's default).
        "vela_memories": dict(zip(("config", "section"), quantized.memories or (None, None))),
        "program": {
            "file": "model.pte",
            "bytes": len(program.data),
            "sha256": hashlib.sha256(program.data).hexdigest(),
            "inputs": [t.to_json() for t in program.inputs()],
            "outputs": [t.to_json() for t in program.outputs()],
            "cpu_operators": program.operators(),
        },
        "delegates": delegate_entries,
        # A model with nothing the NPU runs (a lone squeeze) is a valid CPU-only program.
        "cpu_only": not delegate_entries,
        "cpu_nodes": cpu_node_list,
        "boundary_fixes": [
            {"node": r.node, "target": r.target, "partition": r.partition, "reason": r.reason}
            for r in partitioner.removals
        ],
        "tosa_rewrites": [_tosa_rewrite(f, partitioner) for f in int48_forks or []],
        "boundary_audit": {"ok": audit.ok, "problems": audit.problems},
        "vela_estimate_total": _totals(delegates),
        # what the export already has of `sdk numerics` (two forward passes, no program run)
        "numerics": export_numerics(quantized, program, io.output_scales(program)),
    }
