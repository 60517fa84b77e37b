"""`sdk deploy --optimize` / `sdk tune`: the candidates are what the board allows, the chosen
is the fastest (smallest) that passes, a candidate with wrong outputs is never chosen."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.cache import Cache
from sdk.cli.main import main
from sdk.deploy.tune import (
    AUTO,
    IOS,
    MAX_PLACEMENTS,
    Candidate,
    Plan,
    Session,
    Trial,
    candidates,
    choose,
    cpu_placements,
    interface,
    render_table,
    tune,
    tune_and_deploy,
)
from sdk.errors import UsageError
from sdk.ethosu.memories import EXECUTORCH_DEFAULT
from sdk.firmware.boards import load_board

REPO = Path(__file__).resolve().parents[2]
MODEL = str(REPO / "tests" / "deploy" / "models" / "tune_conv.py")
# ExecuTorch's default and the board's two modes: the Sram_Only one is the fastest.
TRIED = (
    Candidate(EXECUTORCH_DEFAULT),
    Candidate("Sram_Only"),
    Candidate("Shared_Sram", "Size", "int"),
)


def trial(name: str, passed: bool, cycles: int, size: int) -> Trial:
    return Trial(Candidate(name), "x", passed, True, npu_cycles=cycles, memory_bytes=size,
                 seconds=cycles / 1e6)  # fmt: skip


def test_choose_takes_the_fastest_or_smallest_that_passed():
    trials = [trial("a", True, 300, 10), trial("b", False, 100, 5), trial("c", True, 200, 20)]
    assert choose(trials, "latency").candidate.memory == "c"
    assert choose(trials, "size").candidate.memory == "a"
    assert choose([trial("b", False, 100, 5)], "latency") is None
    with pytest.raises(UsageError, match="latency, size"):
        choose(trials, "fastest")


def test_candidates_are_the_boards_modes_and_never_a_faster_memory(tmp_path):
    from sdk.ethosu.cycles import memory_system

    board = load_board("corstone300")
    found = candidates(board)
    assert {c.memory for c in found} == {EXECUTORCH_DEFAULT, "Shared_Sram", "Sram_Only"}
    assert len(found) == 3 * 2  # memory x --optimise: the program's float I/O kept
    assert {(c.io, c.input_layout) for c in found} == {("float", "as-model")}
    assert len(candidates(board, ios=list(IOS))) == 3 * 2 * 2
    with pytest.raises(UsageError, match="unknown memory 'Dedicated_Sram'"):
        candidates(board, memories=["Dedicated_Sram"])
    memories = board.npu_memories
    ini = str(memories.write_vela_ini(tmp_path))
    for name, mode in memories.modes.items():
        section = memories.section_name(name)
        system = memory_system("ethos-u55-128", section, section, ini)
        # Vela's figure for each region is the board's for the port it sits behind
        assert system.regions[0].bytes_per_cycle == mode.timings[mode.const_port].bytes_per_cycle
        assert system.regions[1].bytes_per_cycle == mode.timings[mode.arena_port].bytes_per_cycle
    default = memory_system()  # ExecuTorch's: no faster than the board's Shared_Sram
    shared = memories.section_name("Shared_Sram")
    assert default.regions == memory_system("ethos-u55-128", shared, shared, ini).regions


def test_an_unknown_goal_is_a_usage_error(capsys):
    code = main(["deploy", MODEL, "--optimize", "fastest", "--target", "qemu", "--quiet"])
    assert code == 2
    assert "--optimize 'fastest': one of latency, size" in capsys.readouterr().err


def test_tuning_a_u85_board_is_refused_before_any_export(tmp_path, capsys):
    """Corstone-320's U85 has no memory systems for tune to vary (sdk.ethosu.memories models
    the U55's): nothing is exported."""
    code = main(["tune", MODEL, "--board", "corstone320", "-o", str(tmp_path / "t")])
    assert code == 2
    assert "ethos-u85: tune varies the U55's memory systems" in capsys.readouterr().err
    assert not (tmp_path / "t" / "candidates").exists()


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Cache:
    return Cache(tmp_path_factory.mktemp("cache"))


@pytest.mark.slow
def test_tune_chooses_the_fewest_cycles_that_pass(tmp_path, cache, capsys):
    """... and says what it will try before the first export, then each candidate as it ends."""
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program
    from sdk.utils.progress import Steps

    board = load_board("corstone300")
    plan = Plan(TRIED, placement=False)
    tuning = tune(MODEL, Session("latency", board, tmp_path, "host", cache), plan,
                  Steps(show=True))  # fmt: skip
    assert [t.candidate for t in tuning.trials] == list(TRIED)
    shown = capsys.readouterr().err.splitlines()
    said = shown.index(plan.describe())
    assert "3 candidates" in shown[said]
    for n, t in enumerate(tuning.trials, 1):
        line = next(i for i, x in enumerate(shown) if f"[{n}/3] {t.candidate.name}" in x)
        assert line > said and f"pass, {t.seconds * 1e3:.3f} ms" in shown[line]
    assert all(t.passed and t.fits for t in tuning.trials), [t.failure for t in tuning.trials]
    fewest = min(tuning.trials, key=lambda t: t.npu_cycles)
    assert tuning.chosen is fewest and fewest.candidate.memory == "Sram_Only"
    # ExecuTorch's default prices memory as the board's Shared_Sram (docs/memory.md)
    assert all(t.npu_cycles > fewest.npu_cycles for t in tuning.trials if t is not fewest)
    for t in tuning.trials:  # each program compiled with its own configuration
        program = load_program(_program_of(t))
        flags = read_delegates(program)[0].compile_specs["compile_flags"]
        section = {EXECUTORCH_DEFAULT: "Ethos_U55_High_End_Embedded"}.get(
            t.candidate.memory, board.npu_memories.section_name(t.candidate.memory)
        )
        assert f"--system-config={section}" in flags and t.candidate.vela_args()[0] in flags
    table = render_table(tuning.to_json())
    assert all(c.name in table for c in TRIED) and f"* {fewest.candidate.name}" in table


def _program_of(t: Trial) -> Path:
    return Path(json.loads((Path(t.deploy_dir) / "deploy.json").read_text())["files"]["program"])


@pytest.mark.slow
def test_a_candidate_with_wrong_outputs_is_never_chosen(tmp_path, cache, monkeypatch):
    """The fastest candidate's device result is corrupted (one output value off): its check
    fails, and the next fastest that passes is chosen."""
    from sdk.ethosu.cycles import program_memory_systems
    from sdk.reference.command_stream import CommandStreamExecutor

    run = CommandStreamExecutor.run

    def corrupted(self, index, inputs, progress=None):
        outputs = run(self, index, inputs, progress)
        if "Sram_Only" in program_memory_systems(self.program)[index].system_config:
            outputs[0] = outputs[0].copy()
            outputs[0].reshape(-1)[0] += np.array(7, outputs[0].dtype)
        return outputs

    monkeypatch.setattr(CommandStreamExecutor, "run", corrupted)
    board = load_board("corstone300")
    tuning = tune(MODEL, Session("latency", board, tmp_path, "host", cache),
                  Plan(TRIED, placement=False))  # fmt: skip
    wrong = next(t for t in tuning.trials if t.candidate.memory == "Sram_Only")
    assert not wrong.passed and "host reference" in wrong.failure
    assert tuning.chosen is not None and tuning.chosen is not wrong
    passed = [t for t in tuning.trials if t.passed]
    # the fewest cycles (ExecuTorch's default and Shared_Sram tie: the smaller program wins)
    assert tuning.chosen.npu_cycles == min(t.npu_cycles for t in passed)


@pytest.mark.slow
def test_deploy_optimize_on_qemu_checks_each_and_deploys_the_chosen(tmp_path, monkeypatch):
    """The firmware from the shared cache, as every QEMU deploy test's."""
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp"))
    board = load_board("corstone300")
    report = tune_and_deploy(MODEL, Session("latency", board, tmp_path, "qemu", Cache()), "qemu",
                             Plan(TRIED[:2]))  # fmt: skip
    assert report.passed and report.target == "qemu"
    data = json.loads((tmp_path / "deploy.json").read_text())["tuning"]
    assert data["final_deploy"]["passed"] and data["chosen"] == "Sram_Only Performance io=float"
    # The table's time for the chosen is the deploy's latency (sdk.deploy.performance), and
    # its figures the final deploy's: the same program, run the same way
    chosen = next(t for t in data["trials"] if t["name"] == data["chosen"])
    perf = report.performance
    assert perf is not None and data["final_deploy"]["latency_ms"] == perf["latency_ms"]
    assert chosen["seconds"] * 1e3 == pytest.approx(perf["latency_ms"], rel=1e-12)
    assert (chosen["cpu_instructions"], chosen["npu_cycles"]) == (
        perf["cpu_instructions"], perf["npu_cycles_modelled"],
    )  # fmt: skip
    assert f"latency {perf['latency_ms']:.3f} ms" in render_table(data)
    assert all(t["checked_on"] == "QEMU, virtual U55" and t["passed"] for t in data["trials"])
    configurations = [t for t in data["trials"] if not t["candidate"]["cpu_ops"]]
    assert len(configurations) == 2  # then the chosen one with an operator on the CPU
    assert all(t["cpu_instructions"] and t["npu_cycles"] for t in configurations)
    assert configurations[1]["seconds"] < configurations[0]["seconds"]
    for t in data["trials"][2:]:
        assert (
            t["candidate"]["cpu_ops"]
            and t["cpu_instructions"] > configurations[1]["cpu_instructions"]
        )
    assert "Corstone300_Sram_Only" in report.vela["section"]


def test_optimize_chooses_what_the_user_would_otherwise_give(capsys):
    code = main(["deploy", MODEL, "--optimize", "size", "--npu-memory", "Sram_Only",
                 "--target", "qemu", "--quiet"])  # fmt: skip
    assert code == 2 and "--optimize chooses --npu-memory" in capsys.readouterr().err


@pytest.mark.slow
def test_sdk_tune_prints_the_table_and_fails_when_none_passes(tmp_path, monkeypatch, capsys):
    from sdk.reference.command_stream import CommandStreamExecutor

    args = ["tune", MODEL, "--check", "host", "--npu-memory", "executorch", "--npu-memory",
            "Sram_Only", "--io", "float", "--optimise", "Performance",
            "--input-layout", "as-model", "-o", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "* Sram_Only Performance io=float" in out and "executorch Performance" in out
    saved = json.loads((tmp_path / "tuning.json").read_text())
    assert saved["chosen"] == "Sram_Only Performance io=float" and len(saved["trials"]) == 2
    assert {t["candidate"]["input_layout"] for t in saved["trials"]} == {"as-model"}
    run = CommandStreamExecutor.run

    def off_by_one(self, index, inputs, progress=None):
        return [o + np.array(1, o.dtype) for o in run(self, index, inputs, progress)]

    monkeypatch.setattr(CommandStreamExecutor, "run", off_by_one)
    assert main(args) == 4
    captured = capsys.readouterr()
    assert "no configuration" in captured.err and captured.out.count("FAIL") == 2


@pytest.mark.slow
def test_an_arena_that_spills_is_tried_again_bounded_to_the_npu_arena(tmp_path, cache):
    """An npu_arena smaller than the program's arena (32 KiB here): the candidate spills to
    DDR, and the tuner tries it again with Vela's --arena-cache-size set to the slot. Vela
    cannot go below the live feature maps (this net's 32 KiB), so the retry spills too: it is
    judged like any other, its placement said."""
    from tests.support.boards import board_copy

    slot = 28 * 1024

    def small_sram(data):
        data["slots"]["npu_arena"]["size"] = slot

    board = board_copy(tmp_path, small_sram)
    tuning = tune(MODEL, Session("latency", board, tmp_path / "out", "host", cache),
                  Plan((Candidate("Sram_Only"),), placement=False))  # fmt: skip
    spilled, bounded = tuning.trials
    assert spilled.arena_slot == "scratch" and spilled.passed
    assert bounded.candidate == Candidate("Sram_Only", arena_cache_size=slot)
    flags = json.loads((Path(bounded.deploy_dir) / "deploy.json").read_text())["vela"]["args"]
    assert f"--arena-cache-size={slot}" in flags
    assert bounded.passed and bounded.arena_slot == "scratch"
    assert tuning.chosen in (spilled, bounded)


def test_export_refuses_an_unknown_memory_mode(tmp_path, capsys):
    code = main(["export", MODEL, "-o", str(tmp_path), "--npu-memory", "Dedicated_Sram"])
    assert code == 2 and "unknown NPU memory mode 'Dedicated_Sram'" in capsys.readouterr().err


@pytest.mark.slow
def test_export_compiles_for_the_boards_memory_mode(tmp_path):
    """sdk export --npu-memory: Vela is given the board's ini and section, the report says so,
    and the cycle model reads the same memory system back from the program."""
    from sdk.ethosu.cycles import program_memory_systems
    from sdk.program.pte import load_program

    assert main(["export", MODEL, "-o", str(tmp_path), "--npu-memory", "Sram_Only"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    section = load_board("corstone300").npu_memories.section_name("Sram_Only")
    assert report["vela_memories"]["section"] == section
    (system,) = program_memory_systems(load_program(tmp_path / "model.pte")).values()
    assert system.system_config == section and system.memory_mode == section
    fast = load_board("corstone300").npu_memories.ports["axi0"].bytes_per_cycle
    assert all(m.bytes_per_cycle == fast for m in system.regions.values())  # TA1 = TA0


def test_deploy_to_the_host_only_runs_the_command_stream(tmp_path, capsys):
    """The host reference checked against itself would pass anything: refused."""
    code = main(["deploy", MODEL, "--target", "host", "-o", str(tmp_path), "--quiet"])
    assert code == 2 and "--npu-executor command-stream" in capsys.readouterr().err


def test_placements_are_the_delegates_operators_with_a_cpu_kernel():
    nodes = [
        *["aten.convolution.default"] * 3, *["aten.relu.default"] * 2,
        "quantized_decomposed.quantize_per_tensor.default", "aten.no_such_op.default",
        "aten.add.Tensor", "aten.mean.dim",
    ]  # fmt: skip
    report = {
        "delegates": [{"nodes": [{"name": f"n{i}", "target": t} for i, t in enumerate(nodes)]}]
    }
    kernels = {"aten::convolution.out", "aten::relu.out", "aten::add.out", "aten::mean.out"}
    found = cpu_placements(report, kernels)
    assert found == ["aten.convolution.default", "aten.relu.default", "aten.add.Tensor"]
    assert len(found) == MAX_PLACEMENTS
    assert cpu_placements(report, {"aten::relu.out"}) == ["aten.relu.default"]
    assert cpu_placements({"delegates": []}, kernels) == []


@pytest.mark.slow
def test_the_best_is_tried_again_with_each_operator_on_the_cpu(tmp_path, cache, monkeypatch):
    """After the configurations, the best one with one of its NPU operators on the CPU: each
    such trial is checked like the others, its program holds the CPU kernel, and the CPU's
    convolution at the board's clock does not win."""
    from sdk.program.pte import load_program

    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp"))
    board = load_board("corstone300")
    # Checked on the host, the CPU's time is not counted: no placement is tried
    tuning = tune(MODEL, Session("latency", board, tmp_path / "host", "host", cache),
                  Plan((Candidate("Sram_Only"),)))  # fmt: skip
    assert len(tuning.trials) == 1 and tuning.trials[0].cpu_instructions is None
    tuning = tune(MODEL, Session("latency", board, tmp_path / "qemu", "qemu", cache),
                  Plan((Candidate("Sram_Only"),)))  # fmt: skip
    base, *placed = tuning.trials
    assert placed and [t.candidate for t in placed] == [
        Candidate("Sram_Only", cpu_ops=(op,)) for op in base.placements
    ]
    assert placed[0].candidate.cpu_ops == ("aten.convolution.default",)
    for t in placed:
        assert t.passed, t.failure
        program = load_program(_program_of(t))
        cpu = {program.plan.operators[c.op_index].name for _, c in program.kernel_calls()}
        assert any(t.candidate.cpu_ops[0].split(".")[1] in name for name in cpu), cpu
    assert placed[0].cpu_instructions > base.cpu_instructions
    assert tuning.chosen is base
    assert "cpu=aten.convolution.default" in render_table(tuning.to_json())


@pytest.mark.slow
def test_exports_in_a_tuning_share_one_quantization(tmp_path):
    """Inside shared_quantization the candidates of one input layout are quantized once (the
    Vela configuration and the I/O are the lowering's), and the program lowered from the
    shared quantization and edge program is the one a fresh export gives, byte for byte."""
    from sdk.deploy.references import EXPORT_DIR, export_into, shared_quantization
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.ethosu.memories import VelaMemory, vela_memory
    from sdk.export.model_loader import ModelSpec

    board = load_board("corstone300")

    def memory(mode: str) -> VelaMemory:
        return vela_memory(board.npu_memories, mode, tmp_path / "ini")

    def export(folder: str, mode: str, io: str = "float", layout: str = "as-model") -> tuple:
        export_into(
            tmp_path / folder, ModelSpec.parse(MODEL), None, NpuConfig.U55_128, QuantMode.INT8,
            [], io=io, memories=memory(mode).spec, vela_args=["--optimise=Size"],
            input_layout=layout,
        )  # fmt: skip
        written = tmp_path / folder / EXPORT_DIR
        return (written / "model.pte").read_bytes(), (written / "report.json").read_text()

    with shared_quantization() as shared:
        export("a", "Shared_Sram")
        shared_sram_only = export("b", "Sram_Only", io="int")
        assert len(shared) == 1  # two Vela configurations and two I/Os: one quantization
        export("c", "Sram_Only", layout="channels-last")
        assert len(shared) == 2  # another input layout: another graph to quantize
    assert export("fresh", "Sram_Only", io="int") == shared_sram_only


@pytest.mark.slow
def test_optimize_keeps_the_programs_float_io_unless_io_auto(tmp_path):
    """`--optimize latency` keeps the model's interface: every candidate, and so the chosen
    one, takes float inputs; `--io auto` lets the tuner try integer I/O too."""
    args = ["deploy", MODEL, "--optimize", "latency", "--tune-check", "host",
            "--target", "qemu", "--quiet"]  # fmt: skip
    assert main([*args, "-o", str(tmp_path / "kept")]) == 0
    kept = json.loads((tmp_path / "kept" / "deploy.json").read_text())
    assert {t["candidate"]["io"] for t in kept["tuning"]["trials"]} == {"float"}
    assert kept["io"]["mode"] == "float" and "io=float" in kept["tuning"]["chosen"]
    assert len(kept["tuning"]["trials"]) == 3 * 2  # memory x --optimise
    assert main([*args, "--io", "auto", "-o", str(tmp_path / "auto")]) == 0
    auto = json.loads((tmp_path / "auto" / "deploy.json").read_text())["tuning"]
    tried = [t["candidate"]["io"] for t in auto["trials"]]
    assert tried.count("int") == tried.count("float") == 3 * 2


def test_io_auto_is_the_tuners_choice_only(capsys):
    code = main(["deploy", MODEL, "--io", "auto", "--target", "qemu", "--quiet"])
    assert code == 2 and "--io auto: only with --optimize" in capsys.readouterr().err


def test_the_plan_says_what_varies_and_what_is_kept():
    board = load_board("corstone300")
    ios, layouts = interface(MODEL, None, None)
    kept = Plan(tuple(candidates(board, ios=ios, layouts=layouts))).describe()
    assert kept.startswith("tune: 6 candidates, varying memory executorch|Shared_Sram|Sram_Only")
    assert "kept: io float, input layout as-model (--io auto / --input-layout auto to vary)" in kept
    ios, layouts = interface(MODEL, [AUTO], [AUTO])
    varied = Plan(tuple(candidates(board, ios=ios, layouts=layouts)), placement=False).describe()
    assert "24 candidates" in varied and "io float|int x input layout as-model|channels-last" in (
        varied
    )
    assert "kept" not in varied and "on the CPU" not in varied
