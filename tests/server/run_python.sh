#!/usr/bin/env bash
# Runs one of the server's Python tests: `run_python.sh setup` makes the virtual environment (the
# official openai client, selenium, gguf from PyPI) and the synthesized gpt-oss models; then
# `run_python.sh test_openai` etc. run a test module with it. CTest sets TS_BINARY, TS_TEST_DATA,
# TS_BUILD and TS_SANITIZED; TS_TEST_VENV and TS_MODELS may point elsewhere (scripts/test.sh shares
# them between the Release and the sanitizer build).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${TS_TEST_VENV:-$TS_BUILD/test-venv}"
export TS_MODELS="${TS_MODELS:-$TS_BUILD/test-models}"
export TS_ARTIFACTS="${TS_ARTIFACTS:-$TS_BUILD/test-artifacts}"
if [ "$1" = setup ]; then
  if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/requirements.txt"
  fi
  mkdir -p "$TS_MODELS" "$TS_ARTIFACTS"
  exec "$venv/bin/python" "$here/make_harmony_models.py" "$TS_BINARY" "$TS_TEST_DATA/tokenizers/o200k_base.tiktoken" \
    "$TS_TEST_DATA/templates/openai-gpt-oss-120b.jinja" "$TS_MODELS"
fi
cd "$here"
exec "$venv/bin/python" -u -m unittest -v "$1"
