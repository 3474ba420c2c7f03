#!/usr/bin/env bash
# Makes (once, and again when scripts/requirements-test.txt changes) the virtual environment .venv
# with the Python packages the tests and scripts use, from PyPI, and prints its python's path.
set -euo pipefail
cd "$(dirname "$0")/.."
req=scripts/requirements-test.txt
if [ ! -x .venv/bin/python ] || ! cmp -s "$req" .venv/requirements-test.txt; then
  python3 -m venv .venv >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -r "$req" >&2
  cp "$req" .venv/requirements-test.txt
fi
echo "$PWD/.venv/bin/python"
