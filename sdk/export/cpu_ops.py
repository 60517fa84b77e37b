"""`--cpu-op`: keep chosen operators out of NPU partitions; and the operators the NPU cannot
take whatever the user says (`RankZeroFromRanked`).

The regression forces BMM onto the CPU so the delegate boundary stays where the bug lives
even if a later Vela learns INT16 BMM.
"""

from __future__ import annotations

import difflib

import torch
from torch.fx import Node
from torch.fx.passes.operator_support import OperatorSupportBase

from sdk.errors import UsageError


def normalize_op_name(name: str) -> str:
    """ "aten::bmm", "aten.bmm" or "aten.bmm.default" -> "aten.bmm" / "aten.bmm.default"."""
    text = name.strip().replace("::", ".")
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise UsageError(
            f"--cpu-op {name!r}: expected an operator like aten.bmm or aten.bmm.default"
        )
    return text


class ForceOnCpu(OperatorSupportBase):
    """Rejects nodes whose operator matches one of the given names (packet or overload)."""

    def __init__(self, op_names: list[str]) -> None:
        self.names = {normalize_op_name(n) for n in op_names}

    def matches(self, node: Node) -> bool:
        full = str(getattr(node.target, "__name__", ""))  # "aten.bmm.default"
        packet = full.rsplit(".", 1)[0]
        return full in self.names or packet in self.names

    def is_node_supported(self, submodules, node: Node) -> bool:
        return not (node.op == "call_function" and self.matches(node))

    def check_matches(self, graph_modules: list) -> None:
        """Every name must match an operator of the lowered graph (on the CPU or inside a
        delegate): one that matches none (a typo, the ATen name of an op the edge dialect
        spells otherwise) is an error naming the closest operators, never silently 'forced'."""
        known = sorted(
            {
                str(getattr(node.target, "__name__", ""))
                for module in graph_modules
                for node in module.graph.nodes
                if node.op == "call_function"
            }
            - {""}
        )
        packets = {k.rsplit(".", 1)[0] for k in known}
        problems = []
        for name in sorted(self.names):
            if name in known or name in packets:
                continue
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            close += [k for k in known if k.startswith(name) and k not in close]
            hint = f" (closest: {', '.join(close[:3])})" if close else ""
            problems.append(f"--cpu-op {name} matches no operator of the graph{hint}")
        if problems:
            raise UsageError("; ".join(problems) + f"; its operators: {', '.join(known)}")


class RankZeroFromRanked(OperatorSupportBase):
    """Rejects a node that makes a rank-0 tensor out of a ranked one (an amax over a rank-1
    tensor, a reshape to []): ExecuTorch 1.5.1's TOSA lowering writes the new shape as a
    CONST_SHAPE of () and fails ("InternalError: While executing %tosa_const_shape_default").
    Rank 0 to rank 0 (an add of two scalars) lowers, and stays on the NPU."""

    why = "makes a rank-0 tensor out of a ranked one, which ExecuTorch 1.5.1 cannot lower to TOSA"

    def is_node_supported(self, submodules, node: Node) -> bool:
        if node.op != "call_function" or _rank(node) != 0:
            return True
        return not any((_rank(a) or 0) > 0 for a in node.all_input_nodes)


def _rank(node: Node) -> int | None:
    val = node.meta.get("val")
    return val.dim() if isinstance(val, torch.Tensor) else None
