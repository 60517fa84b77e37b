"""Rewrites of the lowered edge graph (after partitioning, before `to_executorch`).

An int64 index narrowed for a CPU operator that takes only int64: ExecuTorch's Arm passes cast
every int64 graph input to int32 (the NPU has no int64), also one that only ever feeds a CPU
operator. gather and scatter take a Long index only (ExecuTorch's portable kernels, which the
host runtime and the firmware follow), so the narrowed index made the program refuse to run
('index has dtype Int'). Such a cast is dropped: the operator reads the int64 input itself.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from sdk.export.aten_rewrites import replace_nodes
from sdk.export.partitioner import target_name

# Operator -> the position of its index argument; each takes an int64 index only.
_LONG_INDEX_ARG = {
    "aten.gather.default": 2,
    "aten.scatter.src": 2,
    "aten.scatter.value": 2,
    "aten.scatter_add.default": 2,
}
_CASTS = {"dim_order_ops._to_dim_order_copy.default", "aten._to_copy.default"}


def _is_narrowed_long(node: Node) -> bool:
    """A cast of an int64 tensor to int32."""
    if node.op != "call_function" or target_name(node) not in _CASTS or not node.args:
        return False
    source, val = node.args[0], node.meta.get("val")
    src_val = source.meta.get("val") if isinstance(source, Node) else None
    return (
        isinstance(val, torch.Tensor)
        and isinstance(src_val, torch.Tensor)
        and val.dtype == torch.int32
        and src_val.dtype == torch.int64
    )


def _only_a_long_index(node: Node) -> bool:
    """Every user reads `node` as the int64-only index argument and nothing else."""
    for user in node.users:
        position = _LONG_INDEX_ARG.get(target_name(user)) if user.op == "call_function" else None
        if position is None or len(user.args) <= position or user.args[position] is not node:
            return False
        if any(arg is node for i, arg in enumerate(user.args) if i != position):
            return False
    return bool(node.users)


def keep_long_indices(graph_module: GraphModule) -> int:
    """Drop every int64 -> int32 cast whose users all take it as an int64-only index; return
    how many."""
    return replace_nodes(
        graph_module,
        lambda node: _is_narrowed_long(node) and _only_a_long_index(node),
        lambda _graph, node: node.args[0],  # the int64 source itself
    )
