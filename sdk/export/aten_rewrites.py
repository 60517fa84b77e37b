"""Rewrites of the float ATen graph before the Arm quantizer sees it, each a workaround for an
operator that ExecuTorch 1.5.1's quantizer pipeline, its partitioner or its kernels get wrong,
each computing what the model computes (the why is in each function's docstring):
`rewrite_float_graph` runs them all. Also which ATen operators lie outside Core ATen
(`outside_core_aten`), for the lowering to let through."""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten


def replace_nodes(
    graph_module: torch.fx.GraphModule,
    matches: Callable[[torch.fx.Node], bool],
    replacement: Callable[[torch.fx.Graph, torch.fx.Node], torch.fx.Node],
) -> int:
    """Replace every node `matches` picks by what `replacement` builds in its place (inserted
    before it); return how many."""
    graph = graph_module.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or not matches(node):
            continue
        with graph.inserting_before(node):
            new = replacement(graph, node)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        count += 1
    if count:
        graph.lint()
        graph_module.recompile()
    return count


def decompose_addmm(graph_module: torch.fx.GraphModule) -> int:
    """Replace every aten.addmm by beta * input + alpha * (mat1 @ mat2); return how many.

    Workaround: the quantizer's DecomposeAddmmPass makes `mm`, `mul.Scalar` and `add`; with a
    bias that is a constant of the module (`torch.addmm(self.bias, x, self.w)`) the next pass
    (ReplaceScalarWithTensorByProfilePass) meets the bare parameter in that `mul.Scalar` and
    raises. Made here on graph nodes it quantizes as the quantizer's own would have: `mm`,
    `add`, and a `mul` only for a beta or alpha other than 1."""

    def replacement(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node:
        bias, mat1, mat2 = node.args[:3]
        beta = node.kwargs.get("beta", 1)
        alpha = node.kwargs.get("alpha", 1)
        product = _like(node, graph.call_function(aten.mm.default, (mat1, mat2)))
        if alpha != 1:
            product = _like(node, graph.call_function(aten.mul.Tensor, (product, alpha)))
        if beta != 1:
            bias = _like(bias, graph.call_function(aten.mul.Tensor, (bias, beta)))
        return _like(node, graph.call_function(aten.add.Tensor, (product, bias)))

    return replace_nodes(graph_module, lambda node: node.target == aten.addmm.default, replacement)


_REDUCTIONS = (aten.amax.default, aten.amin.default)


def keep_reduced_dims(graph_module: torch.fx.GraphModule) -> int:
    """Replace every amax/amin to a rank-0 tensor by the same with keepdim=True and a view to
    []; return how many.

    Workaround: no rank-0 result can leave an NPU delegate (sdk.export.cpu_ops.
    RankZeroFromRanked), so the reduction would go to the CPU, which has no amax kernel; kept
    1-d it runs on the NPU, the view to [] on the CPU."""

    def matches(node: torch.fx.Node) -> bool:
        val = node.meta.get("val")
        return node.target in _REDUCTIONS and isinstance(val, torch.Tensor) and val.dim() == 0

    def replacement(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node:
        source, dims = node.args[0], node.args[1] if len(node.args) > 1 else []
        # No dims means every dim: named, since ExecuTorch's lowering of an empty list with
        # keepdim writes no output (Vela: 'Output tensor ... does not have any writers').
        dims = list(dims) or list(range(source.meta["val"].dim()))
        kept = _like(node, graph.call_function(node.target, (source, dims, True)))
        kept.meta["val"] = node.meta["val"].reshape([1] * source.meta["val"].dim())
        return _like(node, graph.call_function(aten.view.default, (kept, [])))

    return replace_nodes(graph_module, matches, replacement)


_FILLS = {
    aten.zeros_like.default: 0,
    aten.ones_like.default: 1,
    aten.full_like.default: None,  # the fill value is the second argument
    aten.new_zeros.default: 0,
    aten.new_ones.default: 1,
    aten.new_full.default: None,  # the fill value is the third argument
}


def fills_without_source(graph_module: torch.fx.GraphModule) -> int:
    """Replace every static-shape *_like / new_* fill by `full` of its shape and dtype (no
    tensor argument); return how many.

    Workaround: the fill reads its source only for the shape and dtype, yet the partitioner
    hands the source to the NPU delegate as an input the compiled delegate does not read (Vela
    lists no such input), and the call then passes more values than the NPU program takes."""

    def matches(node: torch.fx.Node) -> bool:
        val = node.meta.get("val")
        return (
            node.target in _FILLS
            and isinstance(val, torch.Tensor)
            and all(isinstance(size, int) for size in val.shape)
        )

    def replacement(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node:
        val = node.meta["val"]
        value = _FILLS[node.target]
        if value is None:
            value = node.args[2] if node.target == aten.new_full.default else node.args[1]
        full = graph.call_function(
            aten.full.default, (list(val.shape), value), {"dtype": val.dtype}
        )
        return _like(node, full)

    return replace_nodes(graph_module, matches, replacement)


def nearest_by_size(graph_module: torch.fx.GraphModule) -> int:
    """Replace every nearest upsample given scales, whose every output dim is 1x or 2x its
    input dim, by the same given its output size; return how many.

    Workaround: PyTorch then ignores the scale (it copies, or halves the index), while
    ExecuTorch's portable kernel always floors index / scale (2.25 on a 2-pixel row reads
    pixels 0, 0, 0, 1; PyTorch 0, 0, 1, 1). Given the size, both compute as PyTorch does."""

    def matches(node: torch.fx.Node) -> bool:
        if node.target != aten.upsample_nearest2d.vec or len(node.args) < 3 or not node.args[2]:
            return False
        source, val = node.args[0].meta.get("val"), node.meta.get("val")
        if not isinstance(source, torch.Tensor) or not isinstance(val, torch.Tensor):
            return False
        pairs = list(zip(source.shape[2:], val.shape[2:], strict=True))
        return all(isinstance(o, int) and o in (i, 2 * i) for i, o in pairs)

    def replacement(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node:
        size = list(node.meta["val"].shape[2:])
        return _like(node, graph.call_function(node.target, (node.args[0], size, None)))

    return replace_nodes(graph_module, matches, replacement)


def _three(values: list[int] | tuple[int, ...] | int) -> list[int]:
    values = [values] if isinstance(values, int) else list(values)
    return values * 3 if len(values) == 1 else values


def conv3d_as_conv2d(graph_module: torch.fx.GraphModule) -> int:
    """Replace every conv3d whose weight (and bias) are constants of the module and whose
    sizes are static by a sum of conv2d, one per kernel depth tap; return how many.

    Workaround: no Ethos-U55 runs CONV3D (ExecuTorch's partitioner leaves it to the CPU) and no
    CPU kernel takes a 5-d convolution (ExecuTorch's portable one refuses it too). The input is
    padded along depth, depth moved next to the batch, each tap's strided depth slice folded
    into the batch and convolved with that tap's 2-d weight (on the NPU), and the sum unfolded
    back to [N, C_out, D_out, H_out, W_out]."""

    def constant(node: object) -> torch.Tensor | None:
        if isinstance(node, torch.fx.Node) and node.op == "get_attr":
            value: object = graph_module
            for part in str(node.target).split("."):  # "conv.weight": a submodule's
                value = getattr(value, part, None)
            return value if isinstance(value, torch.Tensor) else None
        return None

    def matches(node: torch.fx.Node) -> bool:
        if node.target != aten.conv3d.default:
            return False
        source, val = node.args[0], node.meta.get("val")
        bias = node.args[2] if len(node.args) > 2 else None
        return (
            constant(node.args[1]) is not None
            and (bias is None or constant(bias) is not None)
            and isinstance(val, torch.Tensor)
            and isinstance(source, torch.fx.Node)
            and isinstance(source.meta.get("val"), torch.Tensor)
            and all(isinstance(s, int) for s in (*source.meta["val"].shape, *val.shape))
        )

    def replacement(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node:
        x, weight_node = node.args[0], node.args[1]
        args = list(node.args) + [None] * (7 - len(node.args))
        bias_node = args[2]
        stride, padding, dilation = (
            _three(a if a is not None else d) for a, d in zip(args[3:6], (1, 0, 1), strict=True)
        )
        groups = args[6] if args[6] is not None else 1
        weight = constant(weight_node)
        fake_mode = node.meta["val"].fake_mode
        n, c, _, h, w = x.meta["val"].shape
        _, c_out, d_out, h_out, w_out = node.meta["val"].shape

        def call(target, *call_args) -> torch.fx.Node:
            """A node of the rewrite: the conv3d's source location, its own value."""
            new = graph.call_function(target, call_args)
            new.meta.update({k: v for k, v in node.meta.items() if k not in ("val", "tensor_meta")})
            vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in call_args]
            with fake_mode:
                new.meta["val"] = target(*vals)
            return new

        if padding[0]:
            x = call(aten.constant_pad_nd.default, x, [0, 0, 0, 0, padding[0], padding[0]], 0.0)
        x = call(aten.permute.default, x, [0, 2, 1, 3, 4])  # [N, D, C, H, W]
        total = None
        for tap in range(weight.shape[2]):
            start = tap * dilation[0]
            end = start + stride[0] * (d_out - 1) + 1
            name = f"_sdk_conv3d_{node.name}_tap{tap}"
            tap_value = weight[:, :, tap].clone().contiguous()
            graph_module.register_buffer(name, tap_value)
            tap_weight = graph.get_attr(name)
            tap_weight.meta["val"] = fake_mode.from_tensor(tap_value)
            rows = call(aten.slice.Tensor, x, 1, start, end, stride[0])
            rows = call(aten.reshape.default, rows, [n * d_out, c, h, w])
            bias = bias_node if tap == 0 else None
            out = call(aten.conv2d.default, rows, tap_weight, bias, stride[1:], padding[1:],
                       dilation[1:], groups)  # fmt: skip
            total = out if total is None else call(aten.add.Tensor, total, out)
        total = call(aten.reshape.default, total, [n, d_out, c_out, h_out, w_out])
        return call(aten.permute.default, total, [0, 2, 1, 3, 4])

    return replace_nodes(graph_module, matches, replacement)


def rewrite_float_graph(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """Every rewrite above, in order: {rewrite: how many nodes it replaced}."""
    rewrites = (
        decompose_addmm,
        keep_reduced_dims,
        fills_without_source,
        nearest_by_size,
        conv3d_as_conv2d,
    )
    return {rewrite.__name__: rewrite(graph_module) for rewrite in rewrites}


def _like(model: torch.fx.Node, new: torch.fx.Node) -> torch.fx.Node:
    """`new` with the metadata (value, source location) of the node it stands in for."""
    new.meta.update(model.meta)
    return new


def outside_core_aten(graph: torch.fx.Graph) -> list[torch._ops.OpOverload]:
    """The ATen operators of `graph` outside Core ATen (erfinv, the bitwise shifts).
    ExecuTorch's edge verifier refuses any that survive the decompositions ("not in Core ATen
    opset") although the Arm backend lowers these (its own tests turn the check off): the SDK
    lets exactly the graph's through. One that ends up on the CPU still needs a kernel there:
    ExecuTorch's out variant at `to_executorch`, the firmware's at `sdk build`."""
    ops = {
        n.target
        for n in graph.nodes
        if isinstance(n.target, torch._ops.OpOverload)
        and n.target.namespace == "aten"
        and torch.Tag.core not in n.target.tags
        and torch.Tag.view_copy not in n.target.tags
    }
    return sorted(ops, key=str)
