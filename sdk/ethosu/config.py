"""The NPU configurations (`--npu`) and quantization modes (`--quant`) an export accepts."""

from __future__ import annotations

from enum import Enum

from sdk.errors import UsageError

# ExecuTorch's Arm backend is imported where it is used: naming a configuration (sdk deploy
# on a cached program) must not cost the backend's import.


class NpuConfig(str, Enum):
    """Vela accelerator configurations (MACs per cycle in the name)."""

    U55_32 = "ethos-u55-32"
    U55_64 = "ethos-u55-64"
    U55_128 = "ethos-u55-128"
    U55_256 = "ethos-u55-256"
    U65_256 = "ethos-u65-256"
    U65_512 = "ethos-u65-512"
    U85_128 = "ethos-u85-128"
    U85_256 = "ethos-u85-256"
    U85_512 = "ethos-u85-512"
    U85_1024 = "ethos-u85-1024"
    U85_2048 = "ethos-u85-2048"

    @classmethod
    def parse(cls, text: str) -> NpuConfig:
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(t.value for t in cls)
            raise UsageError(f"unknown NPU configuration {text!r}; known: {known}") from None


class QuantMode(str, Enum):
    """INT8: int8 activations and weights. INT16: int16 activations, int8 weights (a16w8)."""

    INT8 = "int8"
    INT16 = "int16"

    @classmethod
    def parse(cls, text: str) -> QuantMode:
        try:
            return cls(text)
        except ValueError:
            raise UsageError(f"unknown quantization {text!r}; use int8 or int16") from None

    def quantization_config(self, per_channel: bool = True):
        """ExecuTorch's config for the mode; `per_channel=False`: one weight scale per tensor."""
        from executorch.backends.arm.quantizer import (
            get_symmetric_a16w8_quantization_config,
            get_symmetric_quantization_config,
        )

        if self is QuantMode.INT16:
            return get_symmetric_a16w8_quantization_config(is_per_channel=per_channel)
        return get_symmetric_quantization_config(is_per_channel=per_channel)


def compile_spec(
    npu: NpuConfig,
    vela_args: list[str] | None = None,
    memories: tuple[str, str] | None = None,
):
    """ExecuTorch's compile spec for the NPU configuration (an EthosUCompileSpec).

    `memories`: (ini path, section) from the board's NPU memories (sdk.ethosu.memories), used
    as both system config and memory mode; None keeps the backend's default Vela config."""
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    extra = list(vela_args or []) or None
    if memories is None:
        return EthosUCompileSpec(npu.value, extra_flags=extra)
    ini, section = memories
    return EthosUCompileSpec(
        npu.value, system_config=section, memory_mode=section, extra_flags=extra, config_ini=ini
    )
