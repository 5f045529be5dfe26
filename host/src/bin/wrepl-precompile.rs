//! Compiles the guest component ahead of time into the artifact the
//! binary embeds (`guest-js/dist/wrepl-guest.x86_64-linux.cwasm`), for
//! `x86_64-unknown-linux-gnu` CPUs with the x86-64-v3 features, whatever
//! machine this runs on: the same guest and wasmtime give the same bytes.
//!
//! ```sh
//! wrepl-precompile [--check] [GUEST.wasm [OUT.cwasm]]
//! ```
//!
//! `--check` compares with `OUT` instead of writing it (exit 1 when they
//! differ), as CI does. `scripts/build-guest.sh` runs this after building
//! the guest.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.iter().position(|a| a == "--check") {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    };
    if args.iter().any(|a| a.starts_with('-')) || args.len() > 2 {
        eprintln!("usage: wrepl-precompile [--check] [GUEST.wasm [OUT.cwasm]]");
        return ExitCode::from(2);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let repo = manifest.parent().map(PathBuf::from).unwrap_or(manifest);
    let guest = args.first().map(PathBuf::from).unwrap_or_else(|| repo.join("guest-js/dist/wrepl-guest.wasm"));
    let out =
        args.get(1).map(PathBuf::from).unwrap_or_else(|| repo.join("guest-js/dist/wrepl-guest.x86_64-linux.cwasm"));
    let component = match std::fs::read(&guest) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("wrepl-precompile: {}: {e}", guest.display());
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let artifact = match wrepl::engine::precompile_guest(&component) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("wrepl-precompile: {e}");
            return ExitCode::FAILURE;
        }
    };
    let what = format!(
        "{} ({} bytes, for {} with {}, from {} in {:.1} s)",
        out.display(),
        artifact.len(),
        wrepl::engine::PRECOMPILED_TARGET,
        wrepl::engine::PRECOMPILED_CPU,
        guest.display(),
        started.elapsed().as_secs_f64()
    );
    if check {
        return match std::fs::read(&out) {
            Ok(committed) if committed == artifact => {
                eprintln!("wrepl-precompile: {what} matches");
                ExitCode::SUCCESS
            }
            Ok(_) => {
                eprintln!("wrepl-precompile: {what} differs from a compile of the guest: run scripts/build-guest.sh");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("wrepl-precompile: {}: {e}", out.display());
                ExitCode::FAILURE
            }
        };
    }
    if let Err(e) = std::fs::write(&out, &artifact) {
        eprintln!("wrepl-precompile: {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrepl-precompile: wrote {what}");
    ExitCode::SUCCESS
}
