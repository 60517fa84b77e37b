"""The decoder's regression set (npu_cases.CASES: tiny models and the examples, INT8 and INT16)
exported once per session; each delegate's cmd_data and Vela's own listing of the same stream."""

from __future__ import annotations

from pathlib import Path

import pytest
from npu_cases import DelegateStream, export_key
from vela_oracle import vela_compile

from sdk.program.audit import read_delegates
from sdk.program.pte import load_program


@pytest.fixture(scope="session")
def npu_program(export_case):
    """npu_program(model, quant) -> the exported model.pte of a case (npu_cases.CASES)."""

    def get(model: str, quant: str) -> Path:
        return export_case(*export_key(model, quant)).result.program_path

    return get


@pytest.fixture(scope="session")
def delegate_streams(npu_program, tmp_path_factory):
    """delegate_streams(model, quant) -> [DelegateStream] for every Ethos-U delegate."""
    cache: dict[tuple[str, str], list[DelegateStream]] = {}

    def get(model: str, quant: str) -> list[DelegateStream]:
        if (model, quant) not in cache:
            program_path = npu_program(model, quant)
            streams = []
            for info in read_delegates(load_program(program_path)):
                assert info.vela is not None, info.vela_error
                tosa = program_path.parent / "tosa" / f"delegate_{info.index}.tosa"
                flags = info.compile_specs["compile_flags"].split()
                outdir = tmp_path_factory.mktemp(f"vela_{model}_{quant}_{info.index}")
                streams.append(
                    DelegateStream(
                        f"{model}/{quant}/delegate_{info.index}",
                        info.index,
                        info.vela.blocks["cmd_data"],
                        vela_compile(tosa, flags, outdir),
                    )
                )
            cache[(model, quant)] = streams
        return cache[(model, quant)]

    return get
