"""`sdk deploy` end to end on QEMU with the virtual NPU: the report, the cache, and every way
it must refuse or fail (one line, non-zero exit, nothing half-written in the cache)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import socket
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from sdk.cache import PARTIAL_PREFIX, Cache
from sdk.cli.main import main
from sdk.ethosu.cycles import program_timings
from sdk.ethosu.device import VirtualU55
from sdk.firmware.boards import load_board
from sdk.program.pte import load_program
from sdk.targets.base import VIRTUAL_NPU_MODELLED, VIRTUAL_NPU_TIMING
from sdk.targets.qemu import TIMING_SOURCE as QEMU_TIMING
from sdk.utils.npz import read_arrays, write_arrays

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "shared_split.py"

pytestmark = pytest.mark.slow


def deploy_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(["deploy", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *fragments: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def reseal(entry: Path, name: str) -> None:
    """Record a changed file in the entry's entry.json, so the cache takes the entry as whole."""
    import hashlib

    meta = json.loads((entry / "entry.json").read_text())
    data = (entry / name).read_bytes()
    meta["files"][name] = [len(data), hashlib.sha256(data).hexdigest()]
    (entry / "entry.json").write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("deploy_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        # `auto` is QEMU here even where an FVP is installed: the tests check QEMU's report.
        mp.setenv("SDK_FVP", str(root / "no-fvp-here"))
        yield root


@dataclass
class FirstRun:
    code: int
    work: Path
    report: dict
    terminal: str  # the report as the CLI printed it
    npus: list[VirtualU55]  # the virtual U55s that answered the firmware's driver


@pytest.fixture(scope="module")
def first_run(cache_root, tmp_path_factory) -> FirstRun:
    """The first deploy of the model: exports, builds, runs (CLI, JSON and JUnit), with the
    virtual U55s it made kept for their job logs."""
    work = tmp_path_factory.mktemp("first")
    npus: list[VirtualU55] = []

    class Kept(VirtualU55):
        def __post_init__(self) -> None:
            super().__post_init__()
            npus.append(self)

    terminal = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(terminal):
        mp.setattr("sdk.targets.linked.VirtualU55", Kept)
        code = main([
            "deploy", "--board", "corstone300", str(MODEL), "-o", str(work / "out"),
            "--json", str(work / "report.json"), "--junit", str(work / "junit.xml"),
        ])  # fmt: skip
    report = json.loads((work / "report.json").read_text())
    return FirstRun(code, work, report, terminal.getvalue(), npus)


@pytest.fixture(scope="module")
def first(first_run):
    return first_run.code, first_run.work, first_run.report


def test_first_deploy_runs_everything_and_passes(first):
    code, work, report = first
    assert code == 0, report.get("failure")
    assert report["schema"] == "sdk.deploy.report/1" and report["passed"] is True
    settings = dict(report["quantization"])
    calibration = settings.pop("calibration")
    assert settings == {"weights": "per-channel", "io": "auto", "modules": []}
    assert (calibration["source"], calibration["samples"]) == ("calibration_inputs()", 4)
    assert report["target"]["name"] == "qemu" and report["target"]["why"].startswith("auto")
    assert [s["name"] for s in report["steps"]] == [
        "export", "kernels", "memory", "build", "run", "reference", "compare",
    ]  # fmt: skip
    assert all(s["status"] == "done" for s in report["steps"])
    assert not any(report["cache"][kind]["hit"] for kind in ("program", "firmware", "reference"))
    (output,) = report["outputs"]
    assert output["host_reference"]["identical"] is True
    assert output["criterion"]["ok"] is True and output["criterion"]["outside"] == 0
    assert report["warnings"] == []
    for ref in ("quantized", "fp32"):
        assert (
            output[ref]["floor_met"] is True
            and output[ref]["cosine"] > output[ref]["threshold"]["min_cosine"]
        )
    sources = {t["source"] for t in report["timing"]}
    assert {"Vela estimate", QEMU_TIMING, VIRTUAL_NPU_MODELLED} <= sources
    assert VIRTUAL_NPU_TIMING not in sources  # every delegate is modelled
    regions = {m["region"]: m for m in report["memory"]["regions"]}
    assert (
        regions["itcm"]["source"] == "ELF" and 0 < regions["itcm"]["used"] < regions["itcm"]["size"]
    )
    assert regions["slot:planned"]["used"] > 0
    assert report["memory"]["arenas_after_load"]["planned_used"] > 0
    assert report["placement"]["npu"] and report["placement"]["cpu"]
    # The outputs written are the target's, equal to the host reference of the program.
    from sdk.targets.host import run_host

    inputs = read_arrays(Path(report["files"]["program"]).parents[1] / "inputs.npz")
    (host,) = run_host(Path(report["files"]["program"]), inputs)
    np.testing.assert_array_equal(read_arrays(work / "out" / "outputs.npz")[0], host)
    suite = ET.parse(work / "junit.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) == 7 + 2  # steps, checks


def test_each_delegate_has_the_virtual_u55s_modelled_cycles_beside_vela(first_run):
    """Per delegate: the cycles the virtual U55's job log has for it (> 0), Vela's estimate of
    the same delegate and their ratio; the firmware's PMCCNTR total agrees; the performance
    section at the board's clocks; no "not timed" anywhere."""
    report = first_run.report
    (npu,) = [n for n in first_run.npus if n.job_log]  # one bring-up ran the program
    logged: dict[int, int] = {}
    for job in npu.job_log:
        assert job.cycles, job.timing_error
        logged[job.delegate] = logged.get(job.delegate, 0) + job.cycles
    rows = {t["delegate"]: t for t in report["timing"] if t["source"] == VIRTUAL_NPU_MODELLED}
    assert rows and {d: r["value"] for d, r in rows.items()} == logged  # one inference
    # the same model offline, as a tuner calls it: the cycles the jobs logged
    timings = program_timings(load_program(Path(report["files"]["program"])))
    assert {d: t.cycles for d, t in timings.items()} == logged
    export = json.loads((Path(report["files"]["program"]).parent / "report.json").read_text())
    for d in export["delegates"]:
        row = rows[d["index"]]
        assert row["vela_estimate_cycles"] == d["vela_estimate"]["total_cycles"] > 0
        assert row["ratio_to_vela"] == pytest.approx(row["value"] / row["vela_estimate_cycles"])
    perf = report["performance"]
    assert perf["npu_cycles_modelled"] == sum(logged.values())
    assert perf["npu_cycles_check"]["agrees"] is True
    assert perf["cpu_instructions"] == next(t["value"] for t in report["timing"]
                                            if t["what"] == "CPU")  # fmt: skip
    board = load_board("corstone300")
    assert perf["config"]["cpu_clock_hz"] == board.cpu_clock_hz
    assert perf["config"]["npu_clock_hz"] == board.npu_clock_hz
    expected_ms = board_ms(board, perf["cpu_instructions"], perf["npu_cycles_modelled"])
    assert perf["latency_ms"] == pytest.approx(expected_ms)
    assert 0 < perf["cpu_share"] < 1 and 0 < perf["npu_mac_utilisation"] <= 1
    assert 0 <= perf["npu_memory_bound_share"] <= 1
    assert perf["config"]["npu"] == report["npu"] and perf["config"]["memory_mode"]
    for row in report["profile"]["operators"]:
        if row["kind"] == "npu":
            assert row["npu_cycles_modelled"] == logged[row["delegate"]]
            expected_ms = board_ms(board, row["instructions"], logged[row["delegate"]])
            assert row["latency_ms"] == pytest.approx(expected_ms)
    assert VIRTUAL_NPU_MODELLED in first_run.terminal and "not timed" not in first_run.terminal
    assert "inferences/s" in first_run.terminal


def board_ms(board, instructions: int, cycles: int) -> float:
    return 1e3 * (instructions / board.cpu_clock_hz + cycles / board.npu_clock_hz)


def test_the_firmware_sets_the_boards_timing_adapters_for_the_program(first_run):
    """The program is compiled for ExecuTorch's default (Ethos_U55_High_End_Embedded +
    Shared_Sram, board.yaml's Shared_Sram `stock`): the firmware set the board's timing adapters
    to Shared_Sram's port timings before the jobs, and the virtual U55 timed them at those."""
    ports = load_board("corstone300").npu_memories.ports
    timings = first_run.report["npu_run"]["port_timings"]
    assert timings == {
        port: {
            "bytes_per_cycle": ports[port].bytes_per_cycle,
            "read_latency": ports[port].read_latency,
            "write_latency": ports[port].write_latency,
        }
        for port in ("axi0", "axi1")
    }
    assert "axi1 1 B/cycle (latency 64/0)" in first_run.terminal
    assert all(not npu.unknown_writes for npu in first_run.npus)


def test_the_report_says_where_the_time_goes_per_operator(first):
    """The firmware's per-instruction profile: every instruction of the program once, each CPU
    operator with its calls, the delegates apart, and a Chrome trace of the same events."""
    from sdk.program.pte import operator_name

    _, _, report = first
    profile = report["profile"]
    program = load_program(Path(report["files"]["program"]))
    instructions = len(program.plan.chains[0].instructions)
    assert profile["instructions_recorded"] == instructions and profile["instructions_dropped"] == 0
    assert profile["source"] == QEMU_TIMING
    calls = Counter(operator_name(program.plan.operators[c.op_index])
                    for _, c in program.kernel_calls())  # fmt: skip
    rows = {r["what"]: r for r in profile["operators"]}
    assert {w: r["calls"] for w, r in rows.items() if r["kind"] == "cpu"} == dict(calls)
    delegates = [r for r in profile["operators"] if r["kind"] == "npu"]
    assert len(delegates) == len(program.plan.delegates)
    assert all(r["npu_wait_ticks"] > 0 for r in delegates)  # the virtual U55's host time, apart
    work = [r for r in rows.values() if r["kind"] in ("cpu", "npu")]
    assert profile["cpu_kernel_ticks"] > 0 and all(r["instructions"] > 0 for r in work)
    assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0)
    trace = json.loads(Path(profile["trace"]).read_text())["traceEvents"]
    assert len(trace) == instructions and {e["ph"] for e in trace} == {"X"}
    # ExecuTorch's Inspector reads the ETDump with the export's ETRecord: every CPU operator,
    # with a cost, and the graph operators each kernel call ran.
    from executorch.devtools import Inspector

    inspector = Inspector(etdump_path=profile["etdump"], etrecord=profile["etrecord"])
    frame = inspector.to_dataframe()
    costs = {name: raw for name, raw in zip(frame["event_name"], frame["raw"], strict=True)}
    for op in calls:
        name = f"native_call_{op.split('::')[-1]}"
        assert name in costs and all(t > 0 for t in costs[name]), (name, sorted(costs))
    assert any(frame["op_types"].map(len) > 0)  # the ETRecord mapped instructions to the graph


def test_second_deploy_takes_program_and_firmware_from_the_cache(first, tmp_path, capsys):
    code, out, _ = deploy_cli(
        capsys,
        "--board",
        "corstone300",
        MODEL,
        "-o",
        tmp_path / "out",
        "--json",
        tmp_path / "r.json",
    )
    assert code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    status = {s["name"]: s["status"] for s in report["steps"]}
    assert status["export"] == "cached" and status["build"] == "cached"
    assert status["run"] == "done"  # it still runs on the target
    assert status["reference"] == "cached"  # the same program on the same inputs
    assert report["cache"]["program"] == {**first[2]["cache"]["program"], "hit": True}
    assert report["cache"]["firmware"]["hit"] is True
    assert report["cache"]["reference"] == {**first[2]["cache"]["reference"], "hit": True}
    assert "program, firmware, reference from the cache" in out and "deploy PASSED" in out


def test_the_virtual_npu_runs_the_command_stream_by_default_and_tosa_on_request(
    first, tmp_path, capsys
):
    """QEMU's virtual U55 executes Vela's command stream by default (`first`) and the deploy
    holds it to the host reference (the saved TOSA on the TOSA reference model);
    --npu-executor tosa runs the saved TOSA there instead."""
    assert {d["ran_on"] for d in first[2]["placement"]["npu"]} == {
        "Ethos-U55 driver (firmware) on a virtual U55 (Vela's command stream on the host's "
        "functional Ethos-U55 model)"
    }
    # The firmware's driver programmed the host's virtual U55: its registers, its interrupt.
    npu_run = first[2]["npu_run"]
    assert npu_run["executor"] == "command-stream" and npu_run["driver"] == "firmware"
    assert npu_run["jobs"] == len(first[2]["placement"]["npu"])
    assert npu_run["interrupts"] == npu_run["jobs"]
    assert npu_run["register_accesses"] > 20 * npu_run["jobs"]
    code, out, err = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "out", "--json", tmp_path / "r.json",
        "--npu-executor", "tosa",
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 0, err
    assert {d["ran_on"] for d in report["placement"]["npu"]} == {
        "Ethos-U55 driver (firmware) on a virtual U55 (TOSA reference model on the host)"
    }
    assert report["cache"]["reference"]["hit"] is True  # the same TOSA reference as `first`
    assert report["outputs"][0]["host_reference"]["identical"] is True
    assert report["npu_run"]["executor"] == "tosa"
    assert "NPU: Ethos-U55 driver (firmware) on a virtual U55 (tosa)" in out


def test_the_npu_executor_of_a_target_with_an_npu_is_refused(tmp_path, capsys, cache_root):
    fvp = tmp_path / "FVP_Corstone_SSE-300_Ethos-U55"
    fvp.write_text("#!/bin/sh\necho 'Fast Models [11.27.42]'\n")
    fvp.chmod(0o755)
    code, _, err = deploy_cli(
        capsys, MODEL, "--target", "fvp", "--fvp", fvp, "-o", tmp_path / "out",
        "--npu-executor", "command-stream",
    )  # fmt: skip
    assert code == 2
    one_error_line(err, "--npu-executor command-stream", "fvp runs delegates on its own NPU")


def test_no_cache_writes_nothing_to_the_cache(first, cache_root, tmp_path, capsys):
    before = Cache(cache_root).info()
    code, _, _ = deploy_cli(
        capsys,
        MODEL,
        "-o",
        tmp_path / "out",
        "--no-cache",
        "--quiet",
        "--json",
        tmp_path / "r.json",
    )
    assert code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["cache"]["enabled"] is False
    assert {s["name"]: s["status"] for s in report["steps"]}["export"] == "done"
    assert Cache(cache_root).info() == before


def _with_wrong_reference(first, tmp_path, monkeypatch, name: str) -> None:
    """The first deploy's cache, copied, with reference `name` off by a sign (a whole entry,
    resealed: wrong inside), as SDK_CACHE_DIR."""
    _, _, report = first
    entry = Path(report["files"]["program"]).parents[1]
    copy = tmp_path / "cache"
    shutil.copytree(entry.parents[1], copy)
    (ref,) = read_arrays(copy / "program" / entry.name / name)
    write_arrays(copy / "program" / entry.name / name, [-ref])
    reseal(copy / "program" / entry.name, name)
    monkeypatch.setenv("SDK_CACHE_DIR", str(copy))


def test_a_reference_failing_after_the_run_keeps_the_run(first, tmp_path, capsys, monkeypatch):
    """The host reference fails after the target ran (the saved TOSA unreadable, resealed in a
    copy of the cache): the deploy fails naming the step, and the report still holds what ran
    (the run step, its outputs file, its timing); the compare is skipped, not faked."""
    _, _, report = first
    entry = Path(report["files"]["program"]).parents[1]
    copy = tmp_path / "cache"
    shutil.copytree(entry.parents[1], copy)
    name = "export/tosa/delegate_0.tosa"
    (copy / "program" / entry.name / name).write_bytes(b"not a TOSA flatbuffer")
    reseal(copy / "program" / entry.name, name)
    monkeypatch.setenv("SDK_CACHE_DIR", str(copy))
    code, _, err = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "out", "--quiet", "--json", tmp_path / "r.json"
    )
    assert code == 4
    one_error_line(err, "the target ran", "host reference failed", "not a readable TOSA")
    failed = json.loads((tmp_path / "r.json").read_text())
    status = {s["name"]: s["status"] for s in failed["steps"]}
    assert status["run"] == "done" and status["reference"] == "failed"
    assert status["compare"] == "skipped"
    assert failed["passed"] is False and failed["outputs"] == []
    assert failed["cache"]["reference"] is None
    (outputs,) = read_arrays(tmp_path / "out" / "outputs.npz")
    (before,) = read_arrays(first[1] / "out" / "outputs.npz")  # the same program's run
    np.testing.assert_array_equal(outputs, before)
    assert {t["source"] for t in failed["timing"]} >= {QEMU_TIMING, VIRTUAL_NPU_MODELLED}


def test_a_quantized_model_the_target_misses_fails_naming_the_output(
    first, tmp_path, capsys, monkeypatch
):
    """Feed the verdict a wrong answer: the quantized model's output off by a sign."""
    _with_wrong_reference(first, tmp_path, monkeypatch, "reference_quantized.npz")
    code, _, err = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "out", "--quiet", "--json", tmp_path / "r.json",
        "--junit", tmp_path / "j.xml",
    )  # fmt: skip
    assert code == 4
    one_error_line(err, "output 0 vs the quantized model", "values outside")
    failed = json.loads((tmp_path / "r.json").read_text())
    (output,) = failed["outputs"]
    assert failed["passed"] is False and output["criterion"]["ok"] is False
    assert output["host_reference"]["ok"] is True and output["criterion"]["outside"] > 0
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "1"


def test_an_fp32_floor_missed_warns_and_passes(first, tmp_path, capsys, monkeypatch):
    """The fp32 model's output off by a sign: its floor is a figure and a warning, never a
    lone reason to fail (the verdict is the quantized model's tolerance)."""
    _with_wrong_reference(first, tmp_path, monkeypatch, "reference_fp32.npz")
    code, _, _ = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "out", "--quiet", "--json", tmp_path / "r.json",
    )  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    (output,) = report["outputs"]
    assert report["passed"] is True and output["fp32"]["floor_met"] is False
    (warning,) = report["warnings"]
    assert warning.startswith("output 0 vs the fp32 model:") and "floor" in warning


def test_a_cached_host_reference_is_still_compared(first, tmp_path, capsys, monkeypatch):
    """The host reference's outputs from the cache, made wrong (a whole entry, resealed): the
    deploy compares against them and fails."""
    _, _, report = first
    cache_root = Path(report["files"]["program"]).parents[3]
    copy = tmp_path / "cache"
    shutil.copytree(cache_root, copy)
    entry = copy / "reference" / report["cache"]["reference"]["key"]
    (host,) = read_arrays(entry / "host.npz")
    wrong = host.copy()
    wrong.flat[0] += 1.0
    write_arrays(entry / "host.npz", [wrong])
    reseal(entry, "host.npz")
    monkeypatch.setenv("SDK_CACHE_DIR", str(copy))
    code, _, err = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "out", "--quiet", "--json", tmp_path / "r.json"
    )
    assert code == 4
    one_error_line(
        err, "the target differs from the host reference: output 0", "--npu-executor command-stream"
    )
    failed = json.loads((tmp_path / "r.json").read_text())
    assert failed["cache"]["reference"]["hit"] is True and failed["passed"] is False


def test_a_target_differing_from_the_host_reference_fails(first):
    """One value one unit off where the host reference says otherwise: a host mismatch, the
    first failure named, even though the quantized model would tolerate it."""
    from sdk.deploy.references import REFERENCE_FILES
    from sdk.deploy.verdict import HOST_MISMATCH, judge_outputs
    from sdk.evaluation.accuracy import Tolerance

    _, _, report = first
    entry = Path(report["files"]["program"]).parents[1]
    references = {ref: read_arrays(entry / name) for ref, name in REFERENCE_FILES.items()}
    (host,) = references["quantized"]
    wrong = host.copy()
    wrong.flat[3] += 1.0

    def judge(output):
        return judge_outputs([output], [host], references, "int8", Tolerance(atol=10.0), 1e-6, [])

    checks, failure, _ = judge(wrong)
    assert failure.startswith(f"{HOST_MISMATCH}: output 0") and checks[0].ok is False
    assert checks[0].criterion.ok  # within atol 10 of the quantized model: the host judged it
    checks, failure, _ = judge(host)
    assert failure is None and checks[0].ok


def test_a_model_too_big_for_the_board_stops_before_building(first, tmp_path):
    import yaml

    from sdk.deploy.pipeline import deploy
    from sdk.environment.paths import BOARDS_DIR
    from sdk.errors import ResourceError
    from sdk.firmware.boards import load_board
    from sdk.utils.progress import Steps

    boards = tmp_path / "boards"
    shutil.copytree(BOARDS_DIR / "corstone300", boards / "corstone300")
    shutil.copy(BOARDS_DIR / "board.schema.yaml", boards)
    data = yaml.safe_load((boards / "corstone300" / "board.yaml").read_text())
    data["slots"]["planned"]["size"] = 256
    (boards / "corstone300" / "board.yaml").write_text(yaml.safe_dump(data))
    steps = Steps(show=False)
    with pytest.raises(
        ResourceError, match=r"does not fit board corstone300: slot:planned needs .* of 256"
    ):
        deploy(
            str(MODEL), board=load_board("corstone300", boards), outdir=tmp_path / "o", steps=steps
        )
    assert [(s.name, s.status) for s in steps.records][-1] == ("memory", "failed")
    assert "build" not in [s.name for s in steps.records]


def test_unknown_board(tmp_path, capsys):
    code, _, err = deploy_cli(capsys, "--board", "corstone9", MODEL, "-o", tmp_path / "o")
    assert code == 2
    one_error_line(err, "corstone9")


def test_unknown_target(tmp_path, capsys):
    code, _, err = deploy_cli(capsys, "--target", "cloud", MODEL, "-o", tmp_path / "o")
    assert code == 2
    one_error_line(err, "unknown deploy target 'cloud'", "auto, qemu, fvp, serial")


def test_fvp_not_installed_is_said_before_any_work(tmp_path, capsys, cache_root):
    """Also where CI reads: the JSON and the JUnit say failed (an old pass is not left)."""
    before = Cache(cache_root).info()
    (tmp_path / "r.json").write_text('{"passed": true}')
    code, _, err = deploy_cli(
        capsys, "--target", "fvp", "--fvp", tmp_path / "no" / "FVP", MODEL, "-o", tmp_path / "o",
        "--json", tmp_path / "r.json", "--junit", tmp_path / "j.xml",
    )  # fmt: skip
    assert code != 0
    one_error_line(err, "target fvp is not available here")
    assert Cache(cache_root).info() == before
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] is False and "not available" in report["failure"]
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("failures") == "1"


def test_dead_serial_port(tmp_path, capsys, cache_root):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    before = Cache(cache_root).info()
    code, _, err = deploy_cli(
        capsys, "--target", "serial", "--port", f"socket://127.0.0.1:{port}", MODEL,
        "-o", tmp_path / "o",
    )  # fmt: skip
    assert code != 0
    one_error_line(err, "target serial is not available here", f"127.0.0.1:{port}")
    assert Cache(cache_root).info() == before


@pytest.mark.parametrize(
    "source, fragment",
    [
        ("raise ValueError('no weights here')\n", "no weights here"),
        (
            "def model():\n    return 3\ndef example_inputs():\n    return ()\n",
            "nn.Module",
        ),
    ],
)
def test_a_model_that_fails_to_export_leaves_no_cache_entry(
    tmp_path, capsys, cache_root, source, fragment
):
    bad = tmp_path / "bad.py"
    bad.write_text(source)
    code, _, err = deploy_cli(capsys, bad, "-o", tmp_path / "o")
    assert code == 1
    one_error_line(err, "bad.py", fragment)
    assert not list((cache_root / "program").glob(f"{PARTIAL_PREFIX}*"))
    (programs,) = [k for k in Cache(cache_root).info().kinds if k.kind == "program"]
    assert programs.entries == 1 and programs.partial == 0  # only the example's program


def test_missing_model_file(tmp_path, capsys):
    code, _, err = deploy_cli(capsys, tmp_path / "nope.py", "-o", tmp_path / "o")
    assert code == 1
    one_error_line(err, "nope.py")


def test_inputs_of_the_wrong_dtype_are_refused_not_cast(first, tmp_path, capsys):
    _, _, report = first
    (x,) = read_arrays(Path(report["files"]["program"]).parents[1] / "inputs.npz")
    write_arrays(tmp_path / "in.npz", [x.astype(np.float64)])
    code, _, err = deploy_cli(capsys, MODEL, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "o")
    assert code == 2
    one_error_line(err, "in.npz", "float64", "float32")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip")
    code, _, err = deploy_cli(capsys, MODEL, "--inputs", tmp_path / "bad.npz", "-o", tmp_path / "o")
    assert code == 2
    one_error_line(err, "bad.npz", "not a readable .npz")


def test_a_damaged_cache_entry_is_rebuilt_not_used(first, tmp_path, capsys, monkeypatch):
    _, _, report = first
    entry = Path(report["files"]["program"]).parents[1]
    copy = tmp_path / "cache"
    shutil.copytree(entry.parents[1], copy)
    damaged = copy / "program" / entry.name / "export" / "model.pte"
    damaged.write_bytes(damaged.read_bytes()[:100])  # as a disk error would leave it
    monkeypatch.setenv("SDK_CACHE_DIR", str(copy))
    code, _, _ = deploy_cli(
        capsys, MODEL, "-o", tmp_path / "o", "--quiet", "--json", tmp_path / "r.json"
    )
    assert code == 0
    again = json.loads((tmp_path / "r.json").read_text())
    assert again["cache"]["program"]["hit"] is False and again["passed"] is True
    assert damaged.read_bytes() == Path(report["files"]["program"]).read_bytes()


@pytest.mark.parametrize("model", ["inverted_residual", "mobilenet_v2_block"])
def test_int16_residual_networks_run_end_to_end_on_qemu(model, cache_root, tmp_path, capsys):
    """The INT16 inverted-residual pattern and a MobileNetV2-style stage: the adds on the NPU
    (virtual NPU on QEMU), the firmware equal to the host reference, both floors met."""
    path = REPO / "tests" / "export" / "models" / f"{model}.py"
    code, _, err = deploy_cli(
        capsys, path, "--quant", "int16", "-o", tmp_path / "o", "--quiet",
        "--json", tmp_path / "r.json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["target"]["name"] == "qemu"
    npu_ops = {op for d in report["placement"]["npu"] for op in d["operators"]}
    assert "aten.add.Tensor" in npu_ops
    for output in report["outputs"]:
        assert output["host_reference"]["identical"] is True
        assert output["criterion"]["ok"]
        assert output["quantized"]["floor_met"] and output["fp32"]["floor_met"]
