"""Deploy PyTorch models to Arm Cortex-M + Ethos-U boards (Corstone-300: M55 + U55; Corstone-320:
M85 + U85) and prove they run there."""

from sdk.utils import lazy_exir

__version__ = "0.1.0"

lazy_exir.install()  # every command reads programs; few need ExecuTorch's export stack
