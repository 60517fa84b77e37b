"""`--cpu-op`: keep chosen operators out of NPU partitions.

The regression forces BMM onto the CPU so the delegate boundary stays where the bug lives
even if a later Vela learns INT16 BMM.
"""

from __future__ import annotations

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
