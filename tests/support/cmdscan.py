"""A minimal scan of a delegate's cmd_data for the tests: register values at each operation.

Deliberately independent of sdk.ethosu.stream's decoder (written separately): it knows only the word
layout (opcode bits 0-9, bit 14 = a 32-bit payload follows, parameter bits 16-31) and the few
register codes the tests read (ethosu/vela/ethos_u55_regs/ethos_u55_regs.py)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

# cmd0 (parameter in the command word)
OPS = {0x002: "CONV", 0x003: "DEPTHWISE", 0x005: "POOL", 0x006: "ELEMENTWISE", 0x010: "DMA_START"}
CMD0 = {
    0x100: "IFM_PAD_TOP",
    0x101: "IFM_PAD_LEFT",
    0x102: "IFM_PAD_RIGHT",
    0x103: "IFM_PAD_BOTTOM",
    0x104: "IFM_DEPTH_M1",
    0x105: "IFM_PRECISION",
    0x109: "IFM_ZERO_POINT",
    0x10A: "IFM_WIDTH0_M1",
    0x10B: "IFM_HEIGHT0_M1",
    0x10C: "IFM_HEIGHT1_M1",
    0x10F: "IFM_REGION",
    0x111: "OFM_WIDTH_M1",
    0x112: "OFM_HEIGHT_M1",
    0x113: "OFM_DEPTH_M1",
    0x114: "OFM_PRECISION",
    0x117: "OFM_BLK_DEPTH_M1",
    0x118: "OFM_ZERO_POINT",
    0x11F: "OFM_REGION",
    0x120: "KERNEL_WIDTH_M1",
    0x121: "KERNEL_HEIGHT_M1",
    0x122: "KERNEL_STRIDE",
    0x124: "ACC_FORMAT",
    0x125: "ACTIVATION",
    0x126: "ACTIVATION_MIN",
    0x127: "ACTIVATION_MAX",
    0x128: "WEIGHT_REGION",
    0x129: "SCALE_REGION",
    0x130: "DMA0_SRC_REGION",
    0x131: "DMA0_DST_REGION",
    0x180: "IFM2_BROADCAST",
    0x181: "IFM2_SCALAR",
    0x185: "IFM2_PRECISION",
    0x189: "IFM2_ZERO_POINT",
    0x18F: "IFM2_REGION",
}
# cmd1 (32-bit payload word; the parameter holds extra bits)
CMD1 = {
    0x000: "IFM_BASE0",
    0x004: "IFM_STRIDE_X",
    0x005: "IFM_STRIDE_Y",
    0x010: "OFM_BASE0",
    0x020: "WEIGHT_BASE",
    0x021: "WEIGHT_LENGTH",
    0x022: "SCALE_BASE",
    0x023: "SCALE_LENGTH",
    0x024: "OFM_SCALE",
    0x025: "OPA_SCALE",
    0x026: "OPB_SCALE",
    0x030: "DMA0_SRC",
    0x031: "DMA0_DST",
    0x032: "DMA0_LEN",
    0x080: "IFM2_BASE0",
}


@dataclass
class Op:
    name: str
    param: int  # the operation command's parameter (e.g. pooling / elementwise mode)
    regs: dict[str, int]  # cmd0: the 16-bit parameter; cmd1: payload, and NAME_PARAM
    offset: int  # byte offset of the operation command in cmd_data


def scan(cmd: bytes) -> list[Op]:
    assert cmd[:4] == b"COP1", "cmd_data does not start with COP1"
    pos, ops, regs = 4, [], {}
    while pos + 4 <= len(cmd):
        (word,) = struct.unpack_from("<I", cmd, pos)
        action = word & 0xFF
        if action == 1:
            pos += 12
        elif action == 5:
            pos += 4
        elif action == 2:
            words = (((word >> 8) & 0xFF) << 16) | (word >> 16)
            end = pos + 4 + 4 * words
            pos += 4
            while pos < end:
                (word,) = struct.unpack_from("<I", cmd, pos)
                code, param = word & 0x3FF, word >> 16
                if word & 0x4000:
                    (payload,) = struct.unpack_from("<I", cmd, pos + 4)
                    name = CMD1.get(code, f"cmd1_{code:03x}")
                    regs[name] = payload
                    regs[name + "_PARAM"] = param
                    pos += 8
                    continue
                if code in OPS:
                    ops.append(Op(OPS[code], param, dict(regs), pos))
                elif code not in (0x000, 0x001, 0x011, 0x012, 0x013):
                    regs[CMD0.get(code, f"cmd0_{code:03x}")] = param
                pos += 4
        else:
            raise AssertionError(f"unknown driver action {action} at {pos}")
    return ops


def signed16(value: int) -> int:
    return value - (1 << 16) if value & 0x8000 else value


def region_bytes(data: bytes, base: int, length: int) -> bytes:
    assert base >= 0 and base + length <= len(data), (base, length, len(data))
    return data[base : base + length]


def as_array(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


def s32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


_FORMATS = {0: "NHWC", 1: "NHCWB16"}


def feature_map(op: Op, which: str, shape: tuple[int, int, int]):
    """The IFM, IFM2 or OFM of a scanned operation as a functional-model FeatureMap of `shape`."""
    from sdk.ethosu.functional.featuremap import FeatureMap, Layout, element_dtype

    r = op.regs
    code = {"IFM": (0x000, 0x10A), "OFM": (0x010, 0x11A), "IFM2": (0x080, 0x18A)}[which]
    cmd1 = CMD1

    def one(offset: int) -> int:
        return r.get(cmd1.get(code[0] + offset, f"cmd1_{code[0] + offset:03x}"), 0)

    def zero(offset: int) -> int:
        return r.get(CMD0.get(code[1] + offset, f"cmd0_{code[1] + offset:03x}"), 0)

    precision = r[f"{which}_PRECISION"]
    bits = (precision >> 1) & 3 if which == "OFM" else (precision >> 2) & 3
    return FeatureMap(
        *shape,
        (one(0), one(1), one(2), one(3)),
        zero(1) + 1,  # HEIGHT0_M1
        zero(2) + 1,  # HEIGHT1_M1
        zero(0) + 1,  # WIDTH0_M1
        s32(one(5)),  # STRIDE_Y
        s32(one(4)),  # STRIDE_X
        s32(one(6)),  # STRIDE_C
        Layout[_FORMATS[(precision >> 6) & 3]],
        element_dtype(1 << bits, bool(precision & 1)),
        which,
    )
