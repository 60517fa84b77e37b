"""Deploy PyTorch models to Arm Corstone-300 (Cortex-M55 + Ethos-U55) and prove they run there."""

from sdk.utils import lazy_exir

__version__ = "0.1.0"

lazy_exir.install()  # every command reads programs; few need ExecuTorch's export stack
