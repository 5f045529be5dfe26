# wrepl tasks. `just --list` shows them.

# Build and run the tests (the README's test command).
test:
    cargo test

# Rebuild the guest component (needs the guest toolchain: `just guest-toolchain`).
guest:
    bash scripts/build-guest.sh

# Install Debian's rustc-web, clang/lld 22 and wasm-tools for `just guest`.
guest-toolchain:
    bash scripts/install-guest-toolchain.sh

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

# Criterion benchmarks of the sandbox core, the peer benchmark, then the user's figures (see bench/README.md).
bench: bench-criterion bench-peers bench-user

# First run with an empty or unwritable cache, Grep against rg, binary size (release build).
bench-user:
    bash bench/user-figures.sh

# Instructions per inner call (W3) and per evaluation (W2), counted by valgrind: the same on every run.
bench-instructions:
    bash bench/instructions.sh

# Criterion benchmarks only: cold context, warm eval, host calls, session restore.
bench-criterion:
    cargo bench --bench sandbox

# Everything CI does.
ci:
    bash .ci/run

# Peer benchmark (shared/peers) with wrepl as an extra column; see bench/README.md.
bench-peers:
    cargo build --release --bin wrepl-bench
    rm -rf /tmp/peers && cp -r ../shared/peers /tmp/peers
    cd /tmp/peers && ./run-all.sh --runs 3 --add 'wrepl={{justfile_directory()}}/target/release/wrepl-bench'
