#!/usr/bin/env bash
# The main job: take the example model to an Ethos-U55 program and prove what can be proved here.
#   1. export  examples/yolo_attention.py (INT16) -> out/yolo_attention/model.pte (+ report.json)
#   2. inspect the program; the NPU boundary audit must pass
#   3. run it on the host reference (TOSA reference model + ExecuTorch runtime)
#   4. run its CPU parts on the firmware under QEMU (mps3-an547 has no NPU): each CPU segment
#      must give exactly what ExecuTorch's runtime gave (--expect)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
SDK=.venv/bin/sdk
OUT=out/yolo_attention

$SDK export examples/yolo_attention.py -o "$OUT" --quant int16
$SDK inspect "$OUT/model.pte"
$SDK run --target host "$OUT/model.pte" --inputs "$OUT/example_inputs.npz" -o "$OUT/host_outputs.npz"

rm -rf "$OUT/cpu_segments"
$SDK cut "$OUT/model.pte" --inputs "$OUT/example_inputs.npz" -o "$OUT/cpu_segments"
for program in "$OUT"/cpu_segments/segment_*.pte; do
  stem=${program%.pte}
  $SDK run --target qemu "$program" --inputs "${stem}_inputs.npz" \
    --expect "${stem}_expected.npz" -o "${stem}_qemu.npz"
done
echo "main job: passed"
