#!/usr/bin/env bash
# Install what building the guest needs, from Debian apt and crates.io only.
set -euo pipefail
need_apt=0
for b in /usr/bin/rustc /usr/bin/cargo /usr/bin/clang-22 /usr/bin/llvm-ar-22 /usr/bin/ld.lld-22; do
  [ -x "$b" ] || need_apt=1
done
[ -d /usr/lib/rustlib/src/rust/library ] || need_apt=1
if [ "$need_apt" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # rust-web-llvm links /usr/bin/rust-lld to lld-22 without depending on it.
  apt-get install -y -q --no-install-recommends rustc-web cargo-web rust-web-src rust-web-llvm lld-22 clang-22 llvm-22
fi
if ! command -v wasm-tools >/dev/null || ! wasm-tools --version | grep -q ' 1.263.0'; then
  cargo install wasm-tools@1.263.0 --locked --no-default-features --features component,validate,print
fi
