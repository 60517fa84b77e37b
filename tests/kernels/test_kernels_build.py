"""The kernels as the board firmware builds them: the firmware with every kernel has Helium
code in its kernels (and `kernel_mve=0` has none), and a firmware built for a program
(selective build) runs that program's dtypes, refuses another dtype at run time with
NotSupported, and leaves out the kernels and dtypes the program does not use."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from sdk.errors import TargetError
from sdk.firmware.build import build_firmware
from sdk.firmware.kernelgen import program_kernel_uses
from sdk.program.pte import load_program
from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

pytestmark = pytest.mark.slow  # firmware builds and QEMU runs

BOARD = "corstone300"
# An MVE instruction: one naming a Q register (the FPU's scalar code names S/D registers only).
MVE = re.compile(r"\bq[0-7]\b")


def arm_tool(name: str) -> str:
    tool = shutil.which(name)
    if tool is None:
        pytest.fail(f"{name} is missing (the set-up installs gcc-arm-none-eabi)")
    return tool


def functions(elf: Path) -> dict[str, list[str]]:
    """{demangled function name: its disassembled instructions} of the ELF's code."""
    objdump = [arm_tool("arm-none-eabi-objdump"), "-d", "-C", "--no-show-raw-insn", str(elf)]
    text = subprocess.run(objdump, capture_output=True, text=True, check=True).stdout
    result: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            current = result.setdefault(header.group(1), [])
        elif re.match(r"^\s*[0-9a-f]+:\t", line):
            current.append(line)
    return result


def symbol_sizes(elf: Path) -> dict[str, int]:
    """{demangled symbol: size in bytes} of the ELF's functions."""
    nm = [arm_tool("arm-none-eabi-nm"), "-C", "-S", "--defined-only", str(elf)]
    sizes = {}
    for line in subprocess.run(nm, capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2] in "tTwW":
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


def mve_functions(elf: Path) -> set[str]:
    """The kernels' functions (namespace `kernels`) that hold MVE instructions."""
    return {
        name
        for name, code in functions(elf).items()
        if "kernels::" in name.split("(", 1)[0] and any(MVE.search(line) for line in code)
    }


def small_integers(*shapes) -> tuple[torch.Tensor, ...]:
    """Float tensors of small integers: their sums are exact in any order (also with fused
    multiply-adds), so float results compare bit for bit."""
    gen = torch.Generator().manual_seed(3)
    return tuple(torch.randint(-3, 4, shape, generator=gen).float() for shape in shapes)


@pytest.mark.slow
def test_the_every_kernel_firmware_has_helium_kernels(every_kernel_elf) -> None:
    with_mve = mve_functions(every_kernel_elf)
    # the matrix multiply of bmm/mm/addmm, float convolution rows (inline into
    # aten_convolution_out), the byte copy of split/cat, quantize, dequantize, float add/sub, mul,
    # float32/int8 clamp (clamp, hardtanh, relu)
    for kernel in ("matmul_mve<float>", "matmul_mve<short>", "matmul_mve<signed char>",
                   "aten_convolution_out", "split_copy", "aten_cat_out", "quantize_mve<short>",
                   "dequantize_per_tensor_out", "AddScaled<float", "Mul<float>", "Clamp<float>",
                   "Clamp<signed char>"):  # fmt: skip
        assert any(kernel in name for name in with_mve), f"no Helium code in {kernel}"


def selective_fn(a, b, c):
    qd = torch.ops.quantized_decomposed
    return qd.quantize_per_tensor(torch.bmm(a, b) + c, 0.5, 0, -128, 127, torch.int8)


@pytest.fixture(scope="module")
def selective(tmp_path_factory) -> tuple[bytes, Path, tuple[torch.Tensor, ...]]:
    """A float bmm + add + int8 quantize program and the firmware built for it."""
    inputs = small_integers((1, 3, 4), (1, 4, 5), (1, 3, 5))
    pte = oracle.export(selective_fn, inputs)
    path = tmp_path_factory.mktemp("selective") / "program.pte"
    path.write_bytes(pte)
    return pte, build_firmware(BOARD, path, path.with_name("fw.elf")), inputs


@pytest.mark.slow
def test_kernel_mve_off_builds_the_portable_path(selective, qemu_run) -> None:
    """kernel_mve=0: a variant of its own whose kernels hold no MVE instruction (the same
    program's Helium build has some), and run. Every kernel's portable path is compiled and
    run by the host build (tests/kernels/ on build/host)."""
    pte, helium, inputs = selective
    path = helium.with_name("program.pte")
    elf = build_firmware(BOARD, path, path.with_name("nomve.elf"), kernel_mve=False)
    log = path.with_name("nomve.build.log").read_text()
    assert "kernel_mve=0" in log and "-nomve/executor_runner.elf" in log
    assert any("matmul_mve<float>" in name for name in mve_functions(helium))
    assert mve_functions(elf) == set()
    (out,) = qemu_run(elf, pte, [t.numpy() for t in inputs]).outputs
    (expected,) = oracle.run(pte, inputs)
    np.testing.assert_array_equal(out, expected.numpy())


@pytest.mark.slow
def test_selective_build_runs_the_programs_dtypes(selective, qemu_run) -> None:
    pte, elf, inputs = selective
    assert program_kernel_uses(load_program(pte)) == {
        "aten::bmm.out": {"Float"},
        "aten::add.out": {"Float"},
        "quantized_decomposed::quantize_per_tensor.out": {"Float", "Char"},
    }
    (out,) = qemu_run(elf, pte, [t.numpy() for t in inputs]).outputs
    (expected,) = oracle.run(pte, inputs)
    np.testing.assert_array_equal(out, expected.numpy())


@pytest.mark.slow
def test_selective_build_refuses_other_dtypes_and_operators(selective, qemu_run) -> None:
    pte, elf, _ = selective
    edit = EditedProgram(pte)  # the program's bmm, on int8 tensors
    x = edit.input(np.ones((1, 2, 2), np.int8))
    edit.call_with_out("aten::bmm.out", [x, x], np.int8, (1, 2, 2))
    with pytest.raises(TargetError, match=r"NotSupported \(code 4\): instruction 0 "
                       r"\(aten::bmm.out\): aten::bmm.out: this firmware was built without "
                       r"dtype Char"):  # fmt: skip
        qemu_run(elf, edit.to_bytes(), edit.inputs)

    edit = EditedProgram(pte)  # a kernel the build left out: refused when the method loads
    x = edit.input(np.ones(2, np.float32))
    edit.call_with_out("aten::sub.out", [x, x, edit.int(1)], np.float32, (2,))
    with pytest.raises(TargetError, match=r"OperatorMissing \(code 5\): .*aten::sub.out"):
        qemu_run(elf, edit.to_bytes(), edit.inputs)


@pytest.mark.slow
def test_selective_build_leaves_out_what_the_program_does_not_use(
    selective, every_kernel_elf
) -> None:
    """Float-only bmm is smaller than all-dtype bmm; a source's unselected kernels
    (add.Scalar_out, sub.*) are not compiled at all."""
    _, elf, _ = selective
    full, small = symbol_sizes(every_kernel_elf), symbol_sizes(elf)

    def bmm_bytes(sizes: dict[str, int]) -> int:
        return sum(n for name, n in sizes.items() if "bmm" in name or "matmul" in name)

    assert 0 < bmm_bytes(small) < 0.8 * bmm_bytes(full)
    for name, present in [("matmul_mve<signed char>", False), ("aten_add_Scalar_out", False),
                          ("aten_sub_out", False), ("aten_add_out", True)]:  # fmt: skip
        assert any(name in s for s in full), name
        assert any(name in s for s in small) == present, name


@pytest.mark.slow
def test_selective_build_compiles_the_promoted_compute_dtypes(tmp_path, qemu_run) -> None:
    """A comparison computes in a dtype none of its tensors has: Char > 0.5 in Float, Bool == 1
    in Long. The firmware built for the program compiles those computations."""
    x = torch.tensor([-3, 0, 1, 2, 127], dtype=torch.int8)
    y = torch.tensor([True, False, True, False, True])
    pte = oracle.export(lambda a, b: (a > 0.5, b == 1), (x, y))
    assert program_kernel_uses(load_program(pte)) == {
        "aten::gt.Scalar_out": {"Char", "Bool"},
        "aten::eq.Scalar_out": {"Bool"},
    }
    path = tmp_path / "program.pte"
    path.write_bytes(pte)
    elf = build_firmware(BOARD, path, tmp_path / "fw.elf")
    outputs = qemu_run(elf, pte, [x.numpy(), y.numpy()]).outputs
    for out, expected in zip(outputs, oracle.run(pte, (x, y)), strict=True):
        np.testing.assert_array_equal(out, expected.numpy())
