"""The host/firmware contract is written once (firmware/contract.yaml): the firmware's header is
generated from it at build time and the host reads it, so neither side keeps its own copy."""

from __future__ import annotations

import re
from pathlib import Path

from sdk.environment.paths import REPO_ROOT
from sdk.link import contract
from sdk.link import protocol as p


def test_the_built_header_is_the_one_the_contract_renders(host_build: Path):
    """A generated side that is stale (the contract changed, the header did not) fails here."""
    assert (host_build / "gen" / "contract.h").read_text() == contract.render_header()


def test_the_contract_is_consistent():
    link = contract.data()["link"]
    for table in ("kinds", "nak_reasons"):
        codes = list(link[table].values())
        assert len(codes) == len(set(codes)), f"{table}: a code used twice"
        assert all(0 < c < 256 for c in codes)
    assert p.HEADER.size == 12 and p.TENSOR_HEADER.size == 16 + 4 * contract.data()["max_dims"]
    assert max(link["kinds"].values()) < 0x80 and p.FLAG_RESPONSE == 1
    header = contract.render_header()
    assert "kNpuRegs = 0x70," in header and "constexpr size_t kTensorHeaderSize = 48;" in header


def test_neither_side_writes_a_contract_fact_by_hand():
    sources = [
        path
        for folder in ("firmware", "boards")
        for path in (REPO_ROOT / folder).rglob("*")
        if path.suffix in (".h", ".cpp")
    ]
    by_hand = re.compile(
        r"(constexpr\s+\S+\s+k(ProtocolVersion|MaxPayload|FlagResponse|TensorHeaderSize|MaxDims"
        r"|ProgramMagic|ProgramBlobMagic|BlobVersion|BlobHeaderSize)"
        r"\s*=\s*\d)|(enum\s+(class\s+)?(Kind|NakReason|ScalarType)\b)|platform_exit\(100\)"
    )
    found = [str(path) for path in sources if by_hand.search(path.read_text())]
    assert found == []
    python = (REPO_ROOT / "sdk" / "link" / "protocol.py").read_text()
    assert "class Kind" not in python and 'Struct("<HBBIII8i")' not in python
    # Dtype codes: one table (sdk.utils.dtypes.DTYPES, codes from the executorch wheel).
    for module in ("link/record.py", "firmware/kernelgen.py"):
        text = (REPO_ROOT / "sdk" / module).read_text()
        assert not re.search(r'"Float"\s*:\s*6|6\s*:\s*_code\("Float"', text), module


def test_message_payloads_are_the_contract_s_layouts_on_both_sides():
    """No payload offset or size is a number in the server, no payload a struct format in the
    host's protocol module: both come from contract.yaml `payloads`."""
    by_hand = r"expect_size\(request, [1-9]|\*n = [1-9]|request\.payload \+ [0-9]"
    sources = sorted((REPO_ROOT / "firmware" / "link").glob("*.[ch]*"))
    assert any(f.name == "requests.cpp" for f in sources)  # the handlers are among them
    for source in sources:
        text = source.read_text()
        assert not re.search(by_hand, text), source.name
        assert ".u16(" not in text and ".u32(" not in text and ".u64(" not in text, source.name
    for module in ("protocol.py", "session.py", "npu_service.py", "transport.py"):
        text = (REPO_ROOT / "sdk" / "link" / module).read_text()
        assert "struct.pack(" not in text and not re.search(r'take\("[A-Za-z0-9]{2,}', text)
    # The layouts agree with what the host parses: a round trip through the contract.
    payload = contract.pack("run_reply", iterations=3, tick_hz=7, total_ticks=9, max_ticks=4)
    timing = p.parse_run(payload)
    assert (timing.iterations, timing.tick_hz, timing.total_ticks, timing.max_ticks) == (3, 7, 9, 4)


def test_the_firmware_dtypes_are_the_executorch_wheel_s():
    from executorch.exir.schema import ScalarType

    from sdk.utils.dtypes import DTYPES

    header = contract.render_header()
    for code, dtype in DTYPES.items():
        assert isinstance(code, ScalarType)
        assert f"  {dtype.name} = {int(code)}," in header
