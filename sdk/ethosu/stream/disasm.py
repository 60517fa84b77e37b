"""Text (and JSON) disassembly of a decoded `cmd_data`, for `sdk inspect --npu-commands`.

Offsets, names and field texts are the ones `vela --verbose-register-command-stream` prints
(enum values as Vela names them), so the two can be read side by side; each operation also
gets a one-line summary of the shapes in effect, which Vela's listing leaves to the reader.
"""

from __future__ import annotations

from sdk.ethosu.stream.decode import PRODUCTS, DecodedCmdData, DriverAction, NpuCommand, Operation

_SHAPED = ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE")


def config_text(cfg: int) -> str:
    """CONFIG as the payload targets it: product, MACs per cycle, SHRAM, stream version."""
    product = PRODUCTS.get(cfg >> 28, f"product {cfg >> 28}")
    if cfg >> 28 == 2:  # U85: no SHRAM field (bits 8-15: AXI ports, watchdogs)
        return f"{product}, {1 << (cfg & 0xF)} MACs/cycle, stream version {(cfg >> 4) & 0xF}"
    return (
        f"{product}, {1 << (cfg & 0xF)} MACs/cycle, SHRAM {(cfg >> 8) & 0xFF} KiB, "
        f"stream version {(cfg >> 4) & 0xF}"
    )


def _action_text(action: DriverAction) -> str:
    if action.operands:
        cfg, npu_id = action.operands
        return f"{action.name} config 0x{cfg:08x} ({config_text(cfg)}), id 0x{npu_id:08x}"
    if action.name == "COMMAND_STREAM":
        length = (((action.word >> 8) & 0xFF) << 16) | (action.word >> 16)
        return f"{action.name} {length} words"
    return action.name


def field_texts(cmd: NpuCommand) -> list[tuple[str, str]]:
    """(name, text) of each field, in Vela's order and spelling."""
    return [(f.name, f.text(cmd.fields[f.name])) for f in cmd.command.fields]


def _dims(op: Operation, prefix: str, names: tuple[str, ...]) -> str:
    values = [op.value(f"{prefix}_{n.upper()}_M1", f"{n.rstrip('0')}_m1") for n in names]
    return "x".join("?" if v is None else str(v + 1) for v in values)


def operation_summary(op: Operation) -> str:
    """OFM shape (HxWxC), IFM shape and kernel of a compute operation, from its state."""
    if op.kind not in _SHAPED:
        return ""
    ofm = _dims(op, "OFM", ("height", "width", "depth"))
    ifm = _dims(op, "IFM", ("height0", "width0", "depth"))
    text = f"op {op.index}: {op.kind} ifm tile0 {ifm} -> ofm {ofm}"
    if op.kind != "ELEMENTWISE":
        text += f", kernel {_dims(op, 'KERNEL', ('height', 'width'))}"
    return text


def disassemble(decoded: DecodedCmdData) -> list[str]:
    lines = [f"driver action at 0x{a.offset:04x}: {_action_text(a)}" for a in decoded.actions]
    for cmd in decoded.commands:
        raw = f"{cmd.word:08x}" + ("" if cmd.payload is None else f" {cmd.payload:08x}")
        fields = ", ".join(f"{name}={text}" for name, text in field_texts(cmd))
        line = f"  0x{cmd.stream_offset:06x}  {raw:17}  {cmd.name:27} {fields}".rstrip()
        if isinstance(cmd, Operation):
            summary = operation_summary(cmd)
            line += f"    # {summary}" if summary else ""
        lines.append(line)
    return lines


def _command_json(cmd: NpuCommand) -> dict:
    out = {
        "offset": cmd.stream_offset,
        "name": cmd.name,
        "param": cmd.param,
        "payload": cmd.payload,
        "fields": dict(cmd.fields),
    }
    enums = {f.name: f.text(cmd.fields[f.name]) for f in cmd.command.fields if f.enum}
    if enums:
        out["enums"] = enums
    return out


def to_json(decoded: DecodedCmdData) -> dict:
    return {
        "npu_config": None if decoded.npu_config is None else f"0x{decoded.npu_config:08x}",
        "npu_id": None if decoded.npu_id is None else f"0x{decoded.npu_id:08x}",
        "driver_actions": [{"offset": a.offset, "action": a.name} for a in decoded.actions],
        "stream_words": decoded.stream_words,
        "operations": len(decoded.operations),
        "commands": [_command_json(c) for c in decoded.commands],
    }
