"""A tiny DeiT-style ViT (tests/deploy/models/vit_tiny.py, issue 42) deployed on QEMU with the
virtual U55, INT8: its two blocks compile to byte-identical NPU payloads, which must stay
distinct delegates (each its own TOSA, host reference, profile and report entry), and INT8 puts
attention's q @ k^T where Vela 5.1.0 miscompiles it (the SDK keeps that bmm on the CPU, which
makes the program the `--cpu-op aten.bmm` one). The INT16 deploy and the INT8 one with the
user's `--cpu-op aten.bmm` are `bench/vit_deploy.py`'s (minutes each, as this one)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sdk.ethosu.functional.execute import STUCK_OPERAND_MATMUL
from sdk.program.pte import load_program
from sdk.program.tosa_file import find_tosa, read_tosa_io, tosa_call_mismatch

pytestmark = pytest.mark.slow  # its exports are its own: any worker may take the file
VIT = str(Path(__file__).parent / "models" / "vit_tiny.py")


def assert_distinct_delegates(program_path: Path, report: dict) -> None:
    """Every delegate of the program in the export report once, each with its own saved TOSA
    that fits its call, though two of them share one payload."""
    program = load_program(program_path)
    count = len(program.plan.delegates)
    entries = report["delegates"]
    assert [d["index"] for d in entries] == list(range(count))
    assert len({d["tosa"] for d in entries}) == count
    shared = [sha for sha, n in Counter(d["payload_sha256"] for d in entries).items() if n > 1]
    assert shared, "no two delegates share a payload: the case under test is gone"
    found = find_tosa(program)
    assert sorted(found) == list(range(count))
    calls = {c.delegate_index: [int(a) for a in c.args] for _, c in program.delegate_calls()}
    for index, path in found.items():
        assert tosa_call_mismatch(program, calls[index], read_tosa_io(path.read_bytes())) == ""


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """deployed(quant) -> (DeployReport json, export report json): one QEMU deploy each."""
    import json

    from sdk.deploy.pipeline import deploy

    made: dict[str, tuple[dict, dict]] = {}

    def get(quant: str) -> tuple[dict, dict]:
        if quant not in made:
            work = tmp_path_factory.mktemp(f"vit_{quant}")
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("SDK_FVP", str(work / "no-fvp-here"))  # QEMU, as `auto` picks here
                report = deploy(VIT, board="corstone300", quant=quant, outdir=work / "out")
            program = Path(report.files["program"])
            export = json.loads((program.parent / "report.json").read_text())
            made[quant] = report.to_json(), export
        return made[quant]

    return get


def test_the_vit_on_qemu_equals_the_host_reference(deployed):
    report, export = deployed("int8")
    assert report["passed"] is True, report["failure"]
    assert report["target"]["name"] == "qemu"
    assert all(o["host_reference"]["identical"] for o in report["outputs"])
    # Every delegate ran on the virtual U55 under its own index (byte-identical ones too).
    count = len(export["delegates"])
    timed = {t["what"] for t in report["timing"]}
    assert {f"NPU delegate {i}" for i in range(count)} <= timed
    assert_distinct_delegates(Path(report["files"]["program"]), export)


def test_int8_attention_keeps_its_bmm_on_the_cpu(deployed):
    """INT8 with everything on the NPU: the q @ k^T Vela miscompiles is found and its bmm
    moved to the CPU, said in the export report."""
    _, export = deployed("int8")
    (workaround,) = export["vela_workarounds"]
    assert workaround["cpu_op"] == "aten.bmm.default" and workaround["why"] == STUCK_OPERAND_MATMUL
    assert len(workaround["found"]) == 2  # one q @ k^T per block
    assert "aten::bmm.out" in export["program"]["cpu_operators"]
