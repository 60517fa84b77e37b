#!/usr/bin/env bash
# Install everything this repository needs on a fresh Debian 12 machine; safe to re-run.
#   - Debian packages: the Arm cross toolchain (+ newlib, libstdc++), QEMU, flatbuffers, clang
#     (libFuzzer), venv
#   - a Python venv in .venv: every package from requirements.lock (exact versions and hashes),
#     the SDK editable on top
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

# Re-install only when the dependencies changed (the stamp holds the lock's and pyproject's hash).
# Every package comes from requirements.lock at its exact version and hash (scripts/lock.sh
# regenerates it); the SDK itself is installed editable on top, without resolving anything.
stamp=".venv/.sdk-installed"
want=$(cat pyproject.toml requirements.lock | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing the SDK and its locked Python dependencies into .venv"
  .venv/bin/python -m pip install -q --require-hashes -r requirements.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
