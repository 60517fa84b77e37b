#!/usr/bin/env bash
# The main job: take the example model to an Ethos-U55 program and prove it runs.
#   1. export  examples/yolo_attention.py (INT16) -> out/yolo_attention/model.pte (+ report.json)
#   2. inspect the program; the NPU boundary audit must pass
#   3. run it on the host reference (TOSA reference model + ExecuTorch runtime)
#   4. run the whole program on the firmware under QEMU (mps3-an547, driven over the host
#      link; it has no NPU, so the delegates go to the virtual NPU on the host): its outputs
#      must equal the host reference's bit for bit (--expect)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
SDK=.venv/bin/sdk
OUT=out/yolo_attention

$SDK export examples/yolo_attention.py -o "$OUT" --quant int16
$SDK inspect "$OUT/model.pte"
$SDK run --target host "$OUT/model.pte" --inputs "$OUT/example_inputs.npz" -o "$OUT/host_outputs.npz"
$SDK run --target qemu "$OUT/model.pte" --inputs "$OUT/example_inputs.npz" \
  --expect "$OUT/host_outputs.npz" -o "$OUT/qemu_outputs.npz"
echo "main job: passed"
