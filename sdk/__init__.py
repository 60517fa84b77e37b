"""Deploy PyTorch models to Arm Corstone-300 (Cortex-M55 + Ethos-U55) and prove they run there."""

__version__ = "0.1.0"
