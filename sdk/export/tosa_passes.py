"""The SDK's own passes in ExecuTorch's TOSA lowering pipeline (the Arm backend's pass manager):
`NarrowInt48ForksPass`, which lets Vela compile INT16 (a16w8) convolutions whose output feeds
both another convolution and an add (`sdk_tosa_passes` installs it)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import torch
from executorch.backends.arm._passes.arm_pass import ArmPass
from executorch.backends.arm.tosa.mapping import TosaSpecialDtype
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from torch.fx import GraphModule, Node
from torch.fx.passes.infra.pass_base import PassResult

_tosa = exir_ops.backend.tosa
_CONVOLUTIONS = {
    _tosa.CONV2D.default,
    _tosa.CONV3D.default,
    _tosa.DEPTHWISE_CONV2D.default,
    _tosa.TRANSPOSE_CONV2D.default,
}
_RESCALE = _tosa.RESCALE.default
# RESCALE(input, dtype, scales, input_zp, output_zp)
_IN, _DTYPE, _SCALES, _IN_ZP, _OUT_ZP = range(5)


@dataclass(frozen=True)
class Int48Fork:
    """One convolution whose INT48 output had several readers, and what the pass did."""

    tosa_node: str  # the TOSA convolution in the delegate's lowering graph
    debug_handle: int | None  # shared with the partitioned graph's aten.convolution node
    partition: str | None
    consumers: tuple[str, ...]  # the TOSA rescales moved onto the INT16 output
    rewritten: bool = True  # False: left as is (`note` says why)
    note: str = ""  # why it was left, or what was left

    @classmethod
    def of(
        cls,
        conv: Node,
        consumers: tuple[str, ...] = (),
        note: str = "",
        rewritten: bool = False,
    ) -> Int48Fork:
        return cls(
            conv.name,
            conv.meta.get("debug_handle"),
            conv.meta.get("delegation_tag"),
            consumers,
            rewritten=rewritten,
            note=note,
        )


def _is_int48_convolution(node: Node) -> bool:
    return (
        node.op == "call_function"
        and node.target in _CONVOLUTIONS
        and node.meta.get(TosaSpecialDtype.meta_key()) == TosaSpecialDtype.INT48
    )


def _is_rescale(node: Node) -> bool:
    return node.op == "call_function" and node.target == _RESCALE


def _divide(folded: list[float], narrow: list[float]) -> list[float] | None:
    """A consumer's own scale(s), given the scales folded into its INT48 rescale."""
    if len(folded) != len(narrow) and len(narrow) != 1:
        return None
    ratios = [f / narrow[i % len(narrow)] for i, f in enumerate(folded)]
    if not all(math.isfinite(r) and r > 0 for r in ratios):
        return None
    if all(math.isclose(r, ratios[0], rel_tol=1e-9) for r in ratios):
        return [ratios[0]]  # a per-tensor consumer (the usual case: add, sub, ...)
    return ratios


def conv_output_scales(conv: Node) -> tuple[list[float], int] | None:
    """RESCALE(INT48 -> INT16) scales and output zero point of a quantized convolution:
    input scale x weight scale (per output channel) / output scale, from the qparams the
    convolution node carries (None when it carries none, or its output is not int16)."""
    inputs = conv.meta.get("input_qparams") or {}
    outputs = conv.meta.get("output_qparams") or {}
    if 0 not in inputs or 1 not in inputs or 0 not in outputs:
        return None
    out = outputs[0]
    if out.dtype != torch.int16:
        return None
    weight = inputs[1]
    weight_scales = (
        weight.get_scale_per_channel() if weight.per_channel else [weight.get_scale_per_tensor()]
    )
    in_scale, out_scale = inputs[0].get_scale_per_tensor(), out.get_scale_per_tensor()
    return [in_scale * w / out_scale for w in weight_scales], out.get_zp_per_tensor()


def _make_narrow(conv: Node, template: Node) -> Node | None:
    """A new RESCALE(INT48 -> INT16) of `conv` to its quantized output (meta from `template`,
    one of its rescales)."""
    found = conv_output_scales(conv)
    if found is None:
        return None
    scales, zero_point = found
    args = (conv, torch.int16, scales, 0, zero_point)
    with conv.graph.inserting_after(conv):
        narrow = conv.graph.create_node("call_function", _RESCALE, args)
    narrow.meta = {k: v for k, v in template.meta.items() if k != TosaSpecialDtype.meta_key()}
    narrow.meta["val"] = _RESCALE(conv.meta["val"], *args[1:])
    return narrow


class NarrowInt48ForksPass(ArmPass):
    """Give every INT48 convolution accumulator exactly one reader.

    Workaround: ExecuTorch 1.5.1's RewriteConvPass keeps a convolution's INT32 consumers (the
    input rescales of an add, ...) on the INT48 accumulator, each through its own
    RESCALE(INT48 -> INT32), beside the RESCALE(INT48 -> INT16) that feeds every other
    consumer. With both kinds of consumer (`y = conv_a(x); y + conv_b(y)`) the accumulator has
    two readers; Vela 5.1.0 fuses a RESCALE into a convolution only when it has one, so the
    convolution is left writing a 48-bit tensor the U55 cannot write ("Non-passthrough
    operation (Conv2D) could not run on NPU"). Here the INT32 consumers read the INT16 output
    through RESCALE(INT16 -> INT32) with their own scale (the folded scale divided by the
    convolution's): the quantized PyTorch model's own arithmetic.

    Runs right after ExecuTorch's RewriteConvPass. `forks` records every rewrite (one pass
    instance serves all the delegates of one lowering).
    """

    _passes_required_after: ClassVar[frozenset[type[ExportPass]]] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self.forks: list[Int48Fork] = []

    def call(self, graph_module: GraphModule) -> PassResult:
        modified = False
        for node in list(graph_module.graph.nodes):
            if _is_int48_convolution(node) and len(node.users) > 1:
                modified |= self._narrow(node)
        if modified:
            graph_module.graph.eliminate_dead_code()
            graph_module.graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)

    def _narrow(self, conv: Node) -> bool:
        readers = list(conv.users)
        if not all(_is_rescale(r) and r.args[_IN_ZP] == 0 and len(r.args) == 5 for r in readers):
            return False  # not the shape RewriteConvPass makes: leave it to Vela
        narrow = next((r for r in readers if r.args[_DTYPE] == torch.int16), None)
        made = narrow is None
        if made:
            # Every consumer takes INT32 (e.g. a convolution feeding two adds): make the INT16
            # output, the convolution's own quantized output, for them to read.
            narrow = _make_narrow(conv, template=readers[0])
            if narrow is None:
                self.forks.append(
                    Int48Fork.of(conv, note="left as is: no int16 output quantization recorded")
                )
                return False
        # RESCALE reads only the convolution: it may move right behind it, before every reader.
        conv.append(narrow)
        narrow_scales = list(narrow.args[_SCALES])
        narrow_zp = narrow.args[_OUT_ZP]
        moved, kept = [], []
        for reader in readers:
            if reader is narrow:
                continue
            if reader.args[_DTYPE] == torch.int16 and reader.args == narrow.args:
                reader.replace_all_uses_with(narrow)
                moved.append(reader.name)
                continue
            scales = _divide(list(reader.args[_SCALES]), narrow_scales)
            if scales is None:
                kept.append(reader.name)
                continue
            reader.args = (narrow, reader.args[_DTYPE], scales, narrow_zp, reader.args[_OUT_ZP])
            moved.append(reader.name)
        if not moved:
            if made:
                conv.graph.erase_node(narrow)
            self.forks.append(Int48Fork.of(conv, note="left as is: scales not separable"))
            return False
        note = (
            f"{len(kept)} rescale(s) left on the accumulator: scales not separable" if kept else ""
        )
        self.forks.append(Int48Fork.of(conv, tuple(moved), note=note, rewritten=True))
        return True


@contextlib.contextmanager
def sdk_tosa_passes(enabled: bool = True) -> Iterator[NarrowInt48ForksPass]:
    """Run the SDK's passes in every Arm TOSA lowering inside the block (not when `enabled`
    is False: the yielded pass then records nothing).

    ExecuTorch's Arm pass manager takes extra passes from a module-level registry (its
    `register_pass_insertions_after`); the SDK's pass is in it only for the block, and the
    registry is as it was afterwards.
    """
    from executorch.backends.arm._passes import RewriteConvPass
    from executorch.backends.arm._passes.arm_pass_manager import (
        _registered_pass_insertions,
        register_pass_insertions_after,
    )

    narrow = NarrowInt48ForksPass()
    if not enabled:
        yield narrow
        return
    register_pass_insertions_after(RewriteConvPass, [narrow])
    try:
        yield narrow
    finally:
        insertions = _registered_pass_insertions.get(RewriteConvPass)
        if insertions is not None:
            insertions.after_passes[:] = [p for p in insertions.after_passes if p is not narrow]
            if not insertions.after_passes and not insertions.before_passes:
                del _registered_pass_insertions[RewriteConvPass]
