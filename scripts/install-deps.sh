#!/usr/bin/env bash
# Installs what TurboSpark needs to build and test, from Debian 12 packages only. Skips apt when
# everything is already there, so repeated runs are fast and work offline.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libssl-dev
      libgtest-dev libgmock-dev libbenchmark-dev python3 python3-pip python3-venv ca-certificates
      libcpp-httplib-dev chromium chromium-driver  # the HTTP server; the web page's browser test
      clang libclang-rt-14-dev)  # clang + libFuzzer: scripts/fuzz.sh
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
