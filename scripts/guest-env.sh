# Sourced by scripts/build-guest.sh and bench/guest-variant.sh: the
# environment of a guest build. Debian's Rust 1.96 with its own std source;
# paths are remapped so the bytes do not depend on where the checkout or the
# cargo home live. Needs ROOT and CARGO_HOME; GUEST_RUSTFLAGS and
# GUEST_CFLAGS add flags (for measured variants only, never the committed guest).
export PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CC_wasm32_unknown_unknown=clang-22 AR_wasm32_unknown_unknown=llvm-ar-22
RUSTFLAGS="--remap-path-prefix=$ROOT=/wrepl --remap-path-prefix=$CARGO_HOME=/cargo --remap-path-prefix=/usr/lib/rustlib/src/rust=/rust"
CFLAGS_wasm32_unknown_unknown="-ffile-prefix-map=$ROOT=/wrepl -ffile-prefix-map=$CARGO_HOME=/cargo"
if [ -n "${GUEST_RUSTFLAGS:-}" ]; then RUSTFLAGS="$RUSTFLAGS $GUEST_RUSTFLAGS"; fi
if [ -n "${GUEST_CFLAGS:-}" ]; then CFLAGS_wasm32_unknown_unknown="$CFLAGS_wasm32_unknown_unknown $GUEST_CFLAGS"; fi
export RUSTFLAGS CFLAGS_wasm32_unknown_unknown
export SOURCE_DATE_EPOCH=0
