#!/usr/bin/env bash
# Install everything this repository needs on a fresh Debian 12 machine; safe to re-run.
#   - Debian packages: the Arm cross toolchain (+ newlib, libstdc++), QEMU, flatbuffers, clang
#     (libFuzzer), venv
#   - a Python venv in .venv with the SDK (editable) and its pinned AOT stack
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t APT_PACKAGES < <(sed 's/#.*//' scripts/apt-packages.txt | grep -o '[^[:space:]]\+')

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi

# Re-install only when the dependency list changed (the stamp holds pyproject.toml's hash).
stamp=".venv/.sdk-installed"
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing the SDK and its Python dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first and by exact version: pip then takes the CPU build on this machine's disk
  # instead of resolving a (multi-GB) CUDA build from the index.
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi
