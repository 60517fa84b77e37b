#!/usr/bin/env bash
# The test command: install what is needed, lint, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check sdk tests bench examples
.venv/bin/ruff format --check sdk tests bench examples
exec .venv/bin/pytest "$@"
