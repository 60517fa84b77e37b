#!/usr/bin/env bash
# The main job: take the example model to the Corstone-300 and prove it runs there.
#   sdk deploy exports examples/yolo_attention.py (INT16) for the Ethos-U55, generates the kernel
#   registrations, checks the program fits the board, builds the firmware, runs it on the
#   embedded default target (the FVP when installed, else QEMU mps3-an547 with the delegates on
#   the virtual NPU), and compares the outputs with the host reference (bit-identical) and with
#   the fp32 and quantized PyTorch models. A second run takes the program and the firmware from
#   the cache (~/.cache/sdk) and only runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/sdk deploy --board corstone300 examples/yolo_attention.py --quant int16 "$@"
