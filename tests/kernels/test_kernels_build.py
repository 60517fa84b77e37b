"""The kernels as the firmware builds them: every source cross-compiles for Cortex-M55,
and a dtype-selective build (kernel_select.h from sdk.kernelgen) compiles only what a
program uses and refuses the rest at run time with NotSupported."""

from __future__ import annotations

import shutil
import subprocess

import kbuild
import kcase
import koracle as oracle
import numpy as np
import pytest
import torch
from kharness import Harness

from sdk.kernelgen import SelectedKernel, program_kernel_uses, select_kernels, write_registrations
from sdk.program.pte import load_program


def arm_tool(name: str) -> str:
    tool = shutil.which(name)
    if tool is None:
        pytest.fail(f"{name} is missing (the set-up installs gcc-arm-none-eabi)")
    return tool


def text_size(obj) -> int:
    out = subprocess.run(
        [arm_tool("arm-none-eabi-size"), str(obj)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.splitlines()[1].split()[0])


def symbols(obj) -> str:
    nm = [arm_tool("arm-none-eabi-nm"), "-C", str(obj)]
    return subprocess.run(nm, capture_output=True, text=True, check=True).stdout


def test_every_kernel_cross_compiles_for_cortex_m55() -> None:
    arm_tool(kbuild.ARM_CXX)
    sources = sorted({kbuild.KERNELS / s.source for s in kbuild.kernel_specs().values()})
    objects = kbuild.cross_compile(sources, "m55_all")  # -Werror: warnings fail too
    assert len(objects) == len(sources)
    for obj in objects:
        assert text_size(obj) > 0
    # Helium is in: the bmm object holds the low-overhead loops of the assembly block
    bmm = next(o for o in objects if o.name.startswith("op_bmm"))
    objdump = [arm_tool("arm-none-eabi-objdump"), "-d", str(bmm)]
    disasm = subprocess.run(objdump, capture_output=True, text=True, check=True).stdout
    assert "\tle\tlr" in disasm


def selection(ops_dtypes: dict[str, set[str]]) -> list[SelectedKernel]:
    specs = kbuild.kernel_specs()
    return select_kernels(ops_dtypes, specs)


def test_selective_build_shrinks_and_omits(tmp_path) -> None:
    """Float-only bmm is smaller than all-dtype bmm, and a source's unselected kernels
    (add.Scalar_out, sub.*) are not compiled at all."""
    arm_tool(kbuild.ARM_CXX)
    sources = [
        kbuild.KERNELS / "portable" / "op_bmm.cpp",
        kbuild.KERNELS / "portable" / "op_add.cpp",
    ]
    full = kbuild.cross_compile(sources, "m55_all")
    gen = tmp_path / "gen"
    write_registrations(selection({"aten::bmm.out": {"Float"}, "aten::add.out": {"Float"}}), gen)
    small = kbuild.cross_compile(
        sources,
        "m55_selective", extra_includes=[gen],
    )  # fmt: skip
    assert text_size(small[0]) < 0.8 * text_size(full[0])
    assert text_size(small[1]) < 0.5 * text_size(full[1])
    assert "matmul_mve<signed char>" in symbols(full[0])  # the int8 Helium kernel
    assert "matmul_mve<signed char>" not in symbols(small[0])
    assert "aten_add_Scalar_out" in symbols(full[1])
    assert "aten_add_Scalar_out" not in symbols(small[1])
    assert "aten_sub_out" not in symbols(small[1])
    assert "aten_add_out" in symbols(small[1])


def test_selective_build_from_a_program(tmp_path) -> None:
    """Select kernels for a real program (float bmm + int8 quantize), build the host harness
    that way: the program's dtypes run, another dtype fails with NotSupported."""
    qd = torch.ops.quantized_decomposed

    def fn(a, b):
        return qd.quantize_per_tensor(torch.bmm(a, b), 0.1, 0, -128, 127, torch.int8)

    a, b = torch.randn(1, 3, 4), torch.randn(1, 4, 5)
    pte = oracle.export(fn, (a, b))
    uses = program_kernel_uses(load_program(pte))
    assert uses == {
        "aten::bmm.out": {"Float"},
        "quantized_decomposed::quantize_per_tensor.out": {"Float", "Char"},
    }
    exe = kbuild.build_host_selective(select_kernels(uses, kbuild.kernel_specs()), "host_selective")
    harness = Harness(tmp_path, exe=exe)

    case = kcase.case_from_program(pte, [a.numpy(), b.numpy()])
    (expected,) = oracle.run(pte, (a, b))
    result = harness.run_one(case.builder).ok()
    np.testing.assert_array_equal(result.tensor(case.outputs[0]), expected.numpy())

    c = kcase.CaseBuilder()
    x = c.tensor(np.ones((1, 2, 2), np.int8))
    out = c.tensor(dtype=np.int8, shape=(1, 2, 2))
    c.call("aten::bmm.out", [x, x, out, out])
    result = harness.run_one(c)
    assert result.status == "NotSupported"
    assert "built without dtype Char" in result.reason

    c = kcase.CaseBuilder()
    x = c.tensor(np.ones((2,), np.float32))
    out = c.tensor(dtype=np.float32, shape=(2,))
    c.call("aten::add.out", [x, x, c.int(1), out, out])
    result = harness.run_one(c)
    assert result.status == "OperatorMissing"  # not registered in this build
