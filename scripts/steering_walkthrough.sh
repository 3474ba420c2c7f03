#!/usr/bin/env bash
# The walkthrough of docs/STEERING.md on the default model: capture residuals for two small prompt
# sets, extract a direction by difference of means, and generate with and without it.
# Usage: scripts/steering_walkthrough.sh [OUT_DIR]   (TURBOSPARK=path/to/turbospark overrides the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
ts=${TURBOSPARK:-build/turbospark}
out=${1:-steering-demo}
mkdir -p "$out"

happy=("I am so happy and joyful today, everything is wonderful."
       "What a delightful, cheerful, sunny morning full of love."
       "I feel fantastic, grateful and full of excitement."
       "This is the best day of my life, I am thrilled."
       "Laughing with friends makes me feel warm and glad."
       "Hooray! We won, I am overjoyed and smiling.")
sad=("I am so sad and miserable today, everything is awful."
     "What a gloomy, depressing, rainy morning full of grief."
     "I feel terrible, hopeless and full of despair."
     "This is the worst day of my life, I am devastated."
     "Crying alone makes me feel cold and lonely."
     "Oh no! We lost, I am heartbroken and weeping.")

# 1. One capture per prompt: the residual after every layer at the last prompt token (the chat
#    template ends every prompt with the same assistant header, so only the content differs).
for i in "${!happy[@]}"; do
  "$ts" run --chat -p "${happy[$i]}" -n 1 --temp 0 --capture-residual "$out/happy$i.json" > /dev/null 2>&1
  "$ts" run --chat -p "${sad[$i]}" -n 1 --temp 0 --capture-residual "$out/sad$i.json" > /dev/null 2>&1
done

# 2. The direction: mean(happy) - mean(sad) per layer, as a llama.cpp control vector.
"${PYTHON:-python3}" scripts/extract_direction.py --positive "$out"/happy?.json --negative "$out"/sad?.json \
  -o "$out/happy.gguf" --model-hint llama

# 3. Generations without and with it.
ask() { echo "== $1"; shift; "$ts" run --chat -n 40 --temp 0 "$@" 2>/dev/null; }
q="Tell me about your weekend."
ask "no steering" -p "$q"
ask "--steering happy.gguf:0.3" -p "$q" --steering "$out/happy.gguf:0.3"
ask "--steering happy.gguf:-0.3" -p "$q" --steering "$out/happy.gguf:-0.3"
w="I just won the lottery! Write one sentence about how I feel."
ask "no steering" -p "$w"
ask "--steering happy.gguf --steering-mode ablate --steering-layers 10:20" -p "$w" \
  --steering "$out/happy.gguf" --steering-mode ablate --steering-layers 10:20
