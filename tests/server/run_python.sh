#!/usr/bin/env bash
# Runs one of the server's Python tests: `run_python.sh setup` synthesizes the gpt-oss models they
# use; then `run_python.sh test_openai` etc. run a test module. The Python is TS_PYTHON (CMake's
# TURBOSPARK_PYTHON) when it has the packages of scripts/requirements-test.txt (the official openai
# client, selenium, gguf), else the project's .venv (scripts/python-env.sh makes it). CTest sets
# TS_BINARY, TS_TEST_DATA, TS_BUILD, TS_PYTHON and TS_SANITIZED; TS_MODELS may point elsewhere
# (scripts/test.sh shares the models between the Release and the sanitizer build).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${TS_PYTHON:-python3}"
"$python" -c "import openai, selenium, gguf" 2>/dev/null || python=$(bash "$here/../../scripts/python-env.sh")
export TS_MODELS="${TS_MODELS:-$TS_BUILD/test-models}"
export TS_ARTIFACTS="${TS_ARTIFACTS:-$TS_BUILD/test-artifacts}"
if [ "$1" = setup ]; then
  mkdir -p "$TS_MODELS" "$TS_ARTIFACTS"
  exec "$python" "$here/make_harmony_models.py" "$TS_BINARY" "$TS_TEST_DATA/tokenizers/o200k_base.tiktoken" \
    "$TS_TEST_DATA/templates/openai-gpt-oss-120b.jinja" "$TS_MODELS"
fi
cd "$here"
exec "$python" -u -m unittest -v "$1"
