"""The host/firmware contract (firmware/contract.yaml), read once for the host's side, and the
firmware's side rendered from it (`render_header`: SConstruct writes <build>/gen/contract.h).

So a message kind, a frame or tensor-header layout, the protocol version or an exit code is
written in one place; tests/firmware/test_contract.py checks a built header against it."""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from functools import cache

import yaml

from sdk.environment.paths import FIRMWARE_DIR

CONTRACT_FILE = FIRMWARE_DIR / "contract.yaml"
FORMATS = {"u8": "B", "u16": "H", "u32": "I", "i32": "i", "u64": "Q", "bytes": "s"}
C_TYPES = {"u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "i32": "int32_t"}


@cache
def data() -> dict:
    return yaml.safe_load(CONTRACT_FILE.read_text())


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    count: int
    offset: int


def _entries(name: str) -> list:
    link = data()["link"]
    return link[name] if name in link else link["payloads"][name]


def layout(name: str) -> list[Field]:
    """The fields of a link layout (`frame_header`, `tensor_header`, `program_blob_header`, a
    payload's fixed part) with their offsets."""
    fields, offset = [], 0
    for entry in _entries(name):
        field_name, kind, *repeat = entry  # [name, type] or [name, type, count]
        count = data()[repeat[0]] if repeat and isinstance(repeat[0], str) else (repeat or [1])[0]
        fields.append(Field(field_name, kind, count, offset))
        offset += struct.calcsize(f"<{count}{FORMATS[kind]}")
    return fields


def _format(f: Field) -> str:
    return f"{f.count if f.count > 1 or f.type == 'bytes' else ''}{FORMATS[f.type]}"


def struct_of(name: str) -> struct.Struct:
    """A layout as a struct (little-endian; a counted field is that many values, a `bytes`
    field one byte string)."""
    return struct.Struct("<" + "".join(_format(f) for f in layout(name)))


def pack(name: str, **values: object) -> bytes:
    """A payload's fixed part from its fields by name; fields not given (reserved) are 0."""
    out = []
    for f in layout(name):
        default: object = bytes(f.count) if f.type == "bytes" else 0
        value = values.pop(f.name, default)
        out += list(value) if f.count > 1 and f.type != "bytes" else [value]  # type: ignore[call-overload]
    if values:
        raise ValueError(f"{name}: no fields {sorted(values)}")
    return struct_of(name).pack(*out)


def unpack(name: str, payload: bytes, offset: int = 0) -> dict[str, object]:
    """A payload's fixed part at `offset` as {field: value} (the caller checked the length)."""
    values = iter(struct_of(name).unpack_from(payload, offset))
    out: dict[str, object] = {}
    for f in layout(name):
        many = f.count > 1 and f.type != "bytes"
        out[f.name] = tuple(next(values) for _ in range(f.count)) if many else next(values)
    return out


def kinds() -> type[enum.IntEnum]:
    return enum.IntEnum("Kind", data()["link"]["kinds"])  # type: ignore[return-value]


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.lower().split("_"))


def render_header() -> str:
    """contract.h: the firmware's side of the contract (constants in namespace `contract`)."""
    link = data()["link"]
    lines = [
        "// Generated from firmware/contract.yaml by sdk.link.contract.render_header: do not edit.",
        "#pragma once",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "namespace contract {",
        "",
        f"constexpr uint8_t kProtocolVersion = {link['protocol_version']};",
        f"constexpr size_t kMaxPayload = {link['max_payload']};",
        f"constexpr uint8_t kFlagResponse = 0x{link['flag_response']:02x};",
        f"constexpr uint16_t kGetOutputAfterFailure = 0x{link['get_output_after_failure']:04x};",
        f"constexpr uint32_t kProgramBlobMagic = 0x{link['program_blob_magic']:08X};",
        f"constexpr uint32_t kProgramBlobVersion = {link['program_blob_version']};",
        f"constexpr int kMaxDims = {data()['max_dims']};",
    ]
    for name, code in data()["exit_codes"].items():
        lines.append(f"constexpr int kExit{_camel(name)} = {code};")
    lines += ["", "enum Kind : uint8_t {"]
    lines += [f"  k{_camel(name)} = 0x{code:02X}," for name, code in link["kinds"].items()]
    lines += ["};", "", "enum class NakReason : uint8_t {"]
    lines += [f"  {_camel(name)} = {code}," for name, code in link["nak_reasons"].items()]
    lines += ["};", ""]
    names = ["frame_header", "frame_trailer", "tensor_header", "program_blob_header"]
    names += list(link["payloads"])
    lines += [f"constexpr uint32_t kNpuNoRead = 0x{link['npu_no_read']:08X};"]
    lines += [f"constexpr size_t kMaxProfileEvents = {link['max_profile_events']};"]
    lines += [f"constexpr size_t kMaxFileName = {link['max_file_name']};"]
    modes = link["link_test_modes"].items()
    lines += [f"constexpr uint8_t kLinkTest{_camel(n)} = {v};" for n, v in modes]
    lines.append("")
    for name in names:
        prefix = _camel(name)
        fields = layout(name)
        lines.append(f"// {name}: byte offsets of its fields")
        for f in fields:
            lines.append(f"constexpr size_t k{prefix}{_camel(f.name)} = {f.offset};")
        size = struct_of(name).size
        lines += [f"constexpr size_t k{prefix}Size = {size};", ""]
    from sdk.utils.dtypes import DTYPES

    lines += [
        "// Tensor element types: ExecuTorch's codes (its schema's ScalarType, from the installed",
        "// wheel) and names, as sdk.utils.dtypes.DTYPES has them.",
        "enum class ScalarType : int8_t {",
    ]
    lines += [f"  {d.name} = {int(code)}," for code, d in DTYPES.items()]
    lines += [
        "};",
        "",
        "struct ScalarTypeInfo {",
        "  const char* name;",
        "  ScalarType type;",
        "  uint8_t size;  // bytes per element",
        "};",
        "constexpr ScalarTypeInfo kScalarTypes[] = {",
    ]
    lines += [f'    {{"{d.name}", ScalarType::{d.name}, {d.itemsize}}},' for d in DTYPES.values()]
    lines += ["};", ""]
    lines += ["}  // namespace contract", ""]
    return "\n".join(lines)
