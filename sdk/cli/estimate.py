"""`sdk estimate MODEL`: modelled NPU cycles per operation and in total, beside Vela's estimate."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from sdk.cli.quant_args import add_quant_arguments, quant_options

# Flags that choose how a network is compiled: a .pte was compiled already and says how.
_COMPILE_FLAGS = ("npu", "npu_memory", "vela_arg")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="modelled NPU cycles of a .tflite, .pte or model .py, beside Vela's estimate",
        description="Time each Ethos-U command stream of MODEL with the SDK's cycle model (the "
        "virtual U55's; docs/npu-timing.md): a .tflite is compiled with Vela for the board's "
        "configuration (or read as Vela compiled it), a .pte's delegates are read as they are, "
        "a model .py is exported first. Prints modelled cycles per operation and in total, "
        "Vela's estimate beside them, the memory-bound share and the latency at the board's "
        "NPU clock. Estimates, not measurements (bench/npu_anchors.py compares both with "
        "published PMU counts). Exit 2 on a missing, unknown or corrupt MODEL.",
    )
    p.add_argument("model", type=Path, help="a .tflite, a .pte or a model .py")
    p.add_argument("--board", help="the board (clock, NPU memories; default: the SDK's)")
    p.add_argument("--npu", help="NPU configuration (default: the board's)")
    p.add_argument(
        "--npu-memory", metavar="MODE",
        help="the board's NPU memory mode (board.yaml npu_memories) or executorch "
        "(ExecuTorch's default Vela configuration); default: the board's default",
    )  # fmt: skip
    p.add_argument(
        "--vela-arg", action="append", default=[], metavar="ARG", help="extra Vela flag; repeatable"
    )
    p.add_argument("--quant", default="int8", help="a model .py: int8 (default) or int16")
    add_quant_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON (npu_cycles_modelled, ...)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.cli.export import _vela_memory
    from sdk.errors import UsageError
    from sdk.ethosu.config import NpuConfig
    from sdk.ethosu.estimate import check_model_path, estimate_pte, estimate_tflite, vela_flags
    from sdk.firmware.boards import DEFAULT_BOARD, load_board

    kind = check_model_path(args.model)
    board = load_board(args.board or DEFAULT_BOARD)
    if kind == "pte":
        given = [f"--{n.replace('_', '-')}" for n in _COMPILE_FLAGS if getattr(args, n)]
        if given:
            raise UsageError(
                f"{', '.join(given)}: a .pte was compiled already (its delegates say how); "
                "these apply to a .tflite or a model .py"
            )
    npu = NpuConfig.parse(args.npu or board.npu_default_config).value
    if kind != "pte" and npu not in board.npu_configs:
        raise UsageError(f"--npu {npu}: board {board.name} has {', '.join(board.npu_configs)}")
    with tempfile.TemporaryDirectory(prefix="sdk-estimate-") as tmp:
        workdir = Path(tmp)
        if kind == "pte":
            estimate = estimate_pte(args.model, workdir)
        else:
            memory = _vela_memory(board.name, args.npu_memory)
            if kind == "tflite":
                flags = vela_flags(npu, memory.spec, args.vela_arg)
                estimate = estimate_tflite(args.model, flags, workdir)
            else:
                estimate = _estimate_py(args, npu, memory.spec, workdir)
    estimate.npu_clock_hz = board.npu_clock_hz
    data = estimate.to_json()
    data["board"] = board.name
    print(json.dumps(data, indent=2) if args.json else render(estimate, board.name))
    return 0


def _estimate_py(args: argparse.Namespace, npu: str, spec, workdir: Path):
    """A model .py: the SDK's export (into a temporary folder), then its program."""
    from sdk.ethosu.estimate import estimate_pte
    from sdk.export.pipeline import export_model

    result = export_model(
        str(args.model), workdir / "export", npu=npu, quant=args.quant,
        vela_args=args.vela_arg, quant_options=quant_options(args), memories=spec,
    )  # fmt: skip
    estimate = estimate_pte(result.program_path, workdir)
    estimate.source, estimate.kind = args.model, "py"
    return estimate


def _ratio(a: int, b: int | None) -> str:
    return f"{a / b:.2f}" if b else "-"


def render(estimate, board: str) -> str:
    """The table: per operation modelled vs Vela, then the totals and the latency."""
    lines = [f"{estimate.source} ({estimate.kind}), board {board}"]
    for d in estimate.delegates:
        m = d.memory
        lines.append(
            f"stream {d.index}: {d.timing.npu_config}, {m.system_config} / {m.memory_mode}; "
            f"Vela's estimate: {d.vela_note}"
        )
        lines.append(f"  {'#':>3} {'operator':14} {'name':32} {'modelled':>10} {'Vela':>10} "
                     f"{'ratio':>6} {'mem-bound':>9}")  # fmt: skip
        for k, row in enumerate(d.rows()):
            vela = "-" if row.vela is None else f"{row.vela:,}"
            share = f"{100 * row.memory_bound / row.modelled:.0f}%" if row.modelled else "-"
            lines.append(
                f"  {k:>3} {row.operator[:14]:14} {row.name[:32]:32} {row.modelled:>10,} "
                f"{vela:>10} {_ratio(row.modelled, row.vela):>6} {share:>9}"
            )
        vela = "-" if d.vela_total is None else f"{d.vela_total:,}"
        lines.append(
            f"  {'':>3} {'total':14} {'':32} {d.timing.cycles:>10,} {vela:>10} "
            f"{_ratio(d.timing.cycles, d.vela_total):>6}"
        )
    for index, why in sorted(estimate.untimed.items()):
        lines.append(f"stream {index}: not timed: {why}")
    cycles, vela = estimate.npu_cycles_modelled, estimate.vela_estimate_cycles
    if cycles is None:
        lines.append("NPU cycles: not modelled")
        return "\n".join(lines)
    share = 100 * estimate.memory_bound_cycles / cycles if cycles else 0.0
    lines.append(
        f"NPU cycles: {cycles:,} modelled, Vela's estimate "
        f"{'-' if vela is None else f'{vela:,}'} (ratio {_ratio(cycles, vela)}); "
        f"memory-bound {share:.1f}%"
    )
    if estimate.latency_ms is not None:
        lines.append(
            f"latency: {estimate.latency_ms:.3f} ms at the board's NPU clock "
            f"({estimate.npu_clock_hz / 1e6:g} MHz; modelled cycles, not a measurement)"
        )
    return "\n".join(lines)
