"""The Ethos-U partitioner that keeps INT delegate boundaries quantized (`NpuPartitioner`): no
INT-only NPU partition exposes a float tensor, whatever ExecuTorch 1.5.1's own tagging left."""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import torch
from executorch.backends.arm.constants import DQ_OPS, Q_OPS
from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
from executorch.backends.arm.tosa.specification import TosaLoweringContext
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import WhyNoPartitionReporter, tag_constant_data
from executorch.exir.dialects._ops import ops as exir_ops
from torch._export.utils import _get_shape_env_from_gm
from torch.export.exported_program import ExportedProgram
from torch.fx import GraphModule, Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

TAG = "delegation_tag"

# Ops that lower to nothing (or a pure reshape) in TOSA: a partition of only these is not
# worth a delegate, and the stock partitioner rejects such partitions too.
_NO_COMPUTE_TARGETS = {
    operator.getitem,
    *Q_OPS,
    *DQ_OPS,
    exir_ops.edge.aten.view_copy.default,
    exir_ops.edge.aten.alias_copy.default,
    exir_ops.edge.aten.clone.default,
    exir_ops.edge.aten.detach_copy.default,
    exir_ops.edge.aten.squeeze_copy.dims,
    exir_ops.edge.aten.unsqueeze_copy.default,
    exir_ops.edge.dim_order_ops._clone_dim_order.default,
}


@dataclass(frozen=True)
class Removal:
    """A node taken out of a partition, and why."""

    node: str
    target: str
    partition: str
    reason: str


@dataclass(frozen=True)
class BoundaryTensor:
    node: str
    dtype: str
    shape: tuple[int, ...]


@dataclass
class PartitionInfo:
    """A final partition: its nodes and the tensors that cross its boundary."""

    tag: str
    nodes: list[tuple[str, str]] = field(default_factory=list)  # (name, target)
    inputs: list[BoundaryTensor] = field(default_factory=list)
    outputs: list[BoundaryTensor] = field(default_factory=list)
    # debug handle -> the compute nodes (not Q/DQ) with it: the lowering keeps a node's handle
    # on the TOSA nodes made from it, so the SDK's TOSA passes can name the node they rewrote.
    handles: dict[int, list[str]] = field(default_factory=dict)


def target_name(node: Node) -> str:
    """ "aten.bmm.default", "getitem", ...: how reports name a node's operator."""
    return str(getattr(node.target, "__name__", node.target))


def _tensor_val(node: Node) -> torch.Tensor | None:
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def is_float(node: Node) -> bool:
    """Does this node produce a floating-point tensor (multi-output: any float output)?"""
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    return any(isinstance(v, torch.Tensor) and v.dtype.is_floating_point for v in vals)


def _constant_nodes(program: ExportedProgram) -> set[Node]:
    """Parameters, buffers, lifted constants and get_attrs: they become delegate constants."""
    sig = program.graph_signature
    names = (
        set(sig.inputs_to_parameters)
        | set(sig.inputs_to_buffers)
        | set(sig.inputs_to_lifted_tensor_constants)
    )
    return {
        n
        for n in program.graph.nodes
        if n.op == "get_attr" or (n.op == "placeholder" and n.name in names)
    }


def _multi_output_group(node: Node) -> set[Node]:
    """A multi-output producer and its getitems, which must stay in one place."""
    producer = node.args[0] if node.target is operator.getitem else node
    if not isinstance(producer, Node):
        return {node}
    getitems = {u for u in producer.users if u.target is operator.getitem}
    return {producer, *getitems} if getitems else {node}


def _output_used_inside(nodes: set[Node]) -> Node | None:
    """A tensor the partition gives out that one of its own operators also reads."""
    for node in nodes:
        if node.target is operator.getitem or _tensor_val(node) is None:
            continue
        users = [u for u in node.users if u.target is not operator.getitem or u in nodes]
        if any(u not in nodes for u in users) and any(u in nodes for u in users):
            return node
    return None


def _downstream(node: Node, nodes: set[Node]) -> set[Node]:
    """The partition's nodes that depend on `node` (not `node` itself), with the nodes only
    they use (e.g. their weights' dequantize), which must move with them."""
    found: set[Node] = set()
    frontier = [u for u in node.users if u in nodes]
    while frontier:
        current = frontier.pop()
        if current in found:
            continue
        found.add(current)
        frontier.extend(u for u in current.users if u in nodes)
    grown = True
    while grown:
        feeders = {
            n for n in nodes - found - {node} if n.users and all(u in found for u in n.users)
        }
        grown = bool(feeders)
        found |= feeders
    return found


def _creates_cycle(nodes: set[Node]) -> bool:
    """Would fusing `nodes` into one delegate make the graph cyclic (a path out and back in)?"""
    frontier = [u for n in nodes for u in n.users if u not in nodes]
    seen: set[Node] = set()
    while frontier:
        current = frontier.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in nodes:
            return True
        frontier.extend(current.users)
    return False


class _OnlyThese(OperatorSupportBase):
    """Operator support that accepts exactly a given node set (to re-partition survivors)."""

    def __init__(self, nodes: set[Node]) -> None:
        self.nodes = nodes

    def is_node_supported(self, submodules, node: Node) -> bool:
        return node in self.nodes


class NpuPartitioner(Partitioner):
    """EthosUPartitioner whose INT-only partitions expose only integer tensors.

    Workaround: ExecuTorch 1.5.1's EthosUPartitioner de-tags boundary Q/DQ nodes in one pass in
    graph order and never removes float ops at a partition's output side: a YOLO-style shared
    split leaves `[... -> DQ -> split]` inside an INT-only delegate whose float getitem is a
    delegate output (the NPU writes int16 into a buffer the program calls float32).

    After the stock tagging, for INT-only TOSA profiles, each partition loses the nodes that
    make a float tensor cross its boundary, until stable: a node whose float output has a user
    outside; a Q whose input comes from outside; any other node with a float input from outside
    (DQ scale/zero-point constants do not count); a multi-output node moves with its getitems.
    A partition left cyclic is re-partitioned into acyclic pieces, each going round again;
    pieces without compute are dropped. Every node taken out is recorded with its reason
    (`removals`, for the export report). `fix_boundaries=False`: the stock tagging alone, still
    recorded (the regression tests prove the stock bug with it).

    Every partition also gets its own compile spec whose intermediate-artifact folder is
    `artifact_dir/<tag>`, so each delegate's TOSA and Vela summary can be collected.
    """

    def __init__(
        self,
        compile_spec: EthosUCompileSpec,
        additional_checks: list[OperatorSupportBase] | None = None,
        *,
        fix_boundaries: bool = True,
        artifact_dir: Path | None = None,
    ) -> None:
        self.stock = EthosUPartitioner(compile_spec, additional_checks)
        self.compile_spec = compile_spec
        self.delegation_spec = self.stock.delegation_spec
        self.fix_boundaries = fix_boundaries
        self.artifact_dir = artifact_dir
        self.removals: list[Removal] = []
        self.rejected: dict[str, str] = {}  # node name -> why the stock checks rejected it
        # The stock reporter says "Rejected by <check class>": a check's own `why` says more.
        self._why = {
            f"Rejected by {type(c).__name__}": c.why
            for c in additional_checks or []
            if isinstance(getattr(c, "why", None), str)
        }
        self.partitions: dict[str, PartitionInfo] = {}

    # The decomposition policy is the stock one.
    def ops_to_not_decompose(self, ep: ExportedProgram):
        return self.stock.ops_to_not_decompose(ep)

    def transform_for_pre_decomposition(self, ep: ExportedProgram) -> ExportedProgram:
        return self.stock.transform_for_pre_decomposition(ep)

    @property
    def int_only(self) -> bool:
        spec = self.compile_spec.tosa_spec
        return spec.support_integer() and not spec.support_float()

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        module = exported_program.graph_module
        reporter = WhyNoPartitionReporter()
        with TosaLoweringContext(self.compile_spec.tosa_spec, _get_shape_env_from_gm(module)):
            tags = self.stock._tag_module(module, exported_program, reporter)
        self.rejected = {
            node.name: self._why.get(why, why) for node, why in reporter._rejected_nodes.items()
        }
        constants = _constant_nodes(exported_program)
        if self.fix_boundaries and self.int_only:
            tags = self._keep_boundaries_integer(module, tags, constants)
        tag_constant_data(exported_program)
        self.partitions = {tag: self._describe(module, tag, constants) for tag in sorted(tags)}
        specs = {tag: self._delegation_spec(tag) for tag in tags}
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=specs)

    def _delegation_spec(self, tag: str) -> DelegationSpec:
        if self.artifact_dir is None:
            return self.delegation_spec
        spec = copy.deepcopy(self.compile_spec)
        spec.dump_intermediate_artifacts_to(str(self.artifact_dir / tag))
        return DelegationSpec(self.delegation_spec.backend_id, spec._to_list())

    def _keep_boundaries_integer(
        self, module: GraphModule, tags: set[str], constants: set[Node]
    ) -> set[str]:
        numbers = [int(t[3:]) for t in tags if t.startswith("tag") and t[3:].isdigit()]
        new_tags = count(max(numbers, default=-1) + 1)
        final: set[str] = set()
        work = sorted(tags)
        while work:
            tag = work.pop(0)
            nodes = {n for n in module.graph.nodes if n.meta.get(TAG) == tag}
            self._take_out_float_boundaries(tag, nodes, constants)
            if not nodes:
                continue
            shared = _output_used_inside(nodes)
            if shared is not None:
                # Vela drops a delegate output that also feeds an operator inside the delegate
                # (its record then has fewer outputs than the call passes): cut the partition
                # after that output, so it leaves one delegate and enters the next.
                downstream = _downstream(shared, nodes)
                split_tag = f"tag{next(new_tags)}"
                for node in downstream:
                    node.meta[TAG] = split_tag
                    self._record(
                        node, tag, f"moved to {split_tag}: {shared.name} leaves {tag} and is "
                        "also used inside it (Vela would drop that output)"
                    )  # fmt: skip
                work += [tag, split_tag]
                continue
            if _creates_cycle(nodes):
                # Re-partition exactly the survivors; each piece goes round again.
                for node in nodes:
                    del node.meta[TAG]
                pieces = CapabilityBasedPartitioner(
                    module, _OnlyThese(nodes), allows_single_node_partition=True
                ).propose_partitions()
                for piece in pieces:
                    piece_tag = f"tag{next(new_tags)}"
                    for node in piece.nodes:
                        node.meta[TAG] = piece_tag
                    work.append(piece_tag)
                continue
            if all(n.target in _NO_COMPUTE_TARGETS for n in nodes):
                for node in nodes:
                    del node.meta[TAG]
                    self._record(node, tag, "partition left without compute after boundary fixes")
                continue
            final.add(tag)
        return final

    def _take_out_float_boundaries(self, tag: str, nodes: set[Node], constants: set[Node]) -> None:
        """Remove boundary-crossing float producers/consumers from `nodes` until none is left."""
        while True:
            violations: dict[Node, str] = {}
            for node in nodes:
                reason = self._float_crossing(node, nodes, constants)
                if reason:
                    violations[node] = reason
            if not violations:
                return
            for node, reason in list(violations.items()):
                for member in _multi_output_group(node):
                    if member in nodes and member not in violations:
                        violations[member] = f"kept together with {node.name} ({reason})"
            for node, reason in violations.items():
                if node in nodes:
                    nodes.discard(node)
                    del node.meta[TAG]
                    self._record(node, tag, reason)

    @staticmethod
    def _float_crossing(node: Node, nodes: set[Node], constants: set[Node]) -> str | None:
        outside_users = [u for u in node.users if u not in nodes]
        if outside_users and _tensor_val(node) is not None and is_float(node):
            return f"float output used outside the partition by {outside_users[0].name}"
        if node.target in Q_OPS:
            source = node.args[0]
            if isinstance(source, Node) and source not in nodes:
                return f"quantizes {source.name}, a float tensor from outside the partition"
            return None
        if node.target in DQ_OPS or node.target is operator.getitem:
            return None  # a DQ's input is an integer; its scale/zero-point are constants
        for source in node.all_input_nodes:
            if source in nodes or source in constants:
                continue
            if isinstance(source.meta.get("val"), torch.SymInt):
                continue
            if is_float(source):
                return f"takes {source.name}, a float tensor from outside the partition"
        return None

    def _record(self, node: Node, tag: str, reason: str) -> None:
        self.removals.append(Removal(node.name, target_name(node), tag, reason))

    @staticmethod
    def _describe(module: GraphModule, tag: str, constants: set[Node]) -> PartitionInfo:
        info = PartitionInfo(tag=tag)
        nodes = [n for n in module.graph.nodes if n.meta.get(TAG) == tag and n.op != "placeholder"]
        members = set(nodes)
        seen_inputs: set[Node] = set()
        for node in nodes:
            info.nodes.append((node.name, target_name(node)))
            handle = node.meta.get("debug_handle")
            if isinstance(handle, int) and node.target not in _NO_COMPUTE_TARGETS:
                info.handles.setdefault(handle, []).append(node.name)
            for source in node.all_input_nodes:
                if source in members or source in constants or source in seen_inputs:
                    continue
                if source.meta.get(TAG) == tag:
                    continue
                seen_inputs.add(source)
                info.inputs.append(_boundary_tensor(source))
            if any(u not in members for u in node.users) and _tensor_val(node) is not None:
                info.outputs.append(_boundary_tensor(node))
        return info


def _boundary_tensor(node: Node) -> BoundaryTensor:
    val = _tensor_val(node)
    if val is None:
        return BoundaryTensor(node.name, "?", ())
    return BoundaryTensor(node.name, str(val.dtype).removeprefix("torch."), tuple(val.shape))
