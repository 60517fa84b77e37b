#!/usr/bin/env bash
# The test command: install what is needed, lint, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check sdk tests bench examples
.venv/bin/ruff format --check sdk tests bench examples
# Two workers (this is a 2-core machine), sharing the suite by test file, or by xdist_group
# for the files sharing the examples' exports (tests/conftest.py, scope_of); `-n 0` runs in one
# process.
exec .venv/bin/pytest -n 2 --dist loadgroup "$@"
