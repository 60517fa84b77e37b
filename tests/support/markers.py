"""Markers the suite's files share."""

import pytest

# The files that export the same models (the examples, examples/*.py, and the decoder's set,
# tests/ethosu/models: seconds to a minute each, made once per session by tests/conftest.py's
# fixtures) run on one pytest-xdist worker, so each export is made once (scripts/test.sh runs
# `--dist loadgroup`; tests/conftest.py's scheduler keeps every other file whole on one worker).
SHARED_EXPORTS = pytest.mark.xdist_group("shared_exports")
