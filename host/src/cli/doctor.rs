//! `wrepl doctor`: what confinement Bash commands get on this machine, one
//! line each — Landlock, each namespace, the `/proc` remount, hiding of
//! wrepl's own files, the network, `no_new_privs` — then whether wrepl is
//! dumpable, the effective `confine` mode and network choice, and where the
//! compile cache and the session store are. Always exits 0.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use wrepl::confinement::{self, ConfineMode, Feature};
use wrepl::replay::store::default_store_path;
use wrepl::{EngineOptions, Settings};

use super::ConfineArgs;

/// The flags of `wrepl doctor`.
#[derive(clap::Args)]
pub(crate) struct DoctorArgs {
    /// Print one JSON object instead of lines.
    #[arg(long)]
    json: bool,
    /// Settings file whose `confine` and `allowNet` to report.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// The confinement flags to report (as `eval` and `serve` take them).
    #[command(flatten)]
    confine: ConfineArgs,
}

/// Run `wrepl doctor`.
pub(crate) fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut settings = match &args.settings {
        Some(f) => Settings::load(f)?,
        None => Settings::default(),
    };
    args.confine.apply(&mut settings);
    let probe = confinement::probe();
    let dumpable = confinement::is_dumpable().map_err(|e| e.to_string());
    let host_nnp = confinement::has_no_new_privs().unwrap_or(false);
    let cache = EngineOptions::default().cache_dir;
    let store = default_store_path();
    let missing = probe.missing_of(&confinement::wanted(settings.allow_net));
    let verdict = match (settings.confine, missing.is_empty()) {
        (ConfineMode::Off, _) => "Bash commands run unconfined (confine: off)".to_string(),
        (_, true) => "Bash commands run fully confined".to_string(),
        (ConfineMode::Require, false) => "Bash is refused: confinement is required but incomplete".to_string(),
        (ConfineMode::Prefer, false) => {
            let names: Vec<&str> = missing.iter().map(|(f, _)| f.name()).collect();
            format!("Bash commands run partly confined (missing: {})", names.join(", "))
        }
    };
    let location = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    if args.json {
        let features: serde_json::Map<String, serde_json::Value> = Feature::ALL
            .iter()
            .map(|f| {
                let v = match probe.missing.get(f) {
                    None => json!({"available": true}),
                    Some(why) => json!({"available": false, "reason": why, "consequence": f.consequence()}),
                };
                (serde_json::to_value(f).ok().and_then(|k| k.as_str().map(str::to_string)).unwrap_or_default(), v)
            })
            .collect();
        let out = json!({
            "landlock_abi": probe.landlock_abi,
            "root": probe.root,
            "user_namespace": probe.user_namespace,
            "user_namespace_error": probe.user_namespace_error,
            "features": features,
            "no_new_privs": "set on every confined command",
            "host_no_new_privs": host_nnp,
            "dumpable": dumpable.as_ref().ok(),
            "confine": settings.confine,
            "allow_net": settings.allow_net,
            "verdict": verdict,
            "compile_cache": location(&cache),
            "session_store": location(&store),
        });
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    for line in probe.lines() {
        println!("{line}");
    }
    println!("no_new_privs: set on every confined command (setuid programs and file capabilities grant nothing)");
    println!(
        "dumpable: {}",
        match dumpable {
            Ok(false) =>
                "no (PR_SET_DUMPABLE 0: no core dumps, no ptrace or /proc/<pid>/environ by other processes)".to_string(),
            Ok(true) => "YES — other processes of the user can read wrepl's memory and environment".to_string(),
            Err(e) => format!("unknown ({e})"),
        }
    );
    println!("confine: {} — {verdict}", settings.confine);
    println!(
        "network for commands: {}",
        if settings.allow_net {
            "host network (allowNet / --allow-net: connect and listen wherever the user can)"
        } else {
            "none but their own loopback (--allow-net or \"allowNet\": true grants the host's)"
        }
    );
    println!(
        "pool slots: {}",
        if wrepl::engine::slots_reset_in_place() {
            "reset in place (PAGEMAP_SCAN; no swap area is active)"
        } else if wrepl::engine::paging_out_possible() {
            "unmapped when freed: a swap area is active (or /proc/swaps is unreadable), and the in-place reset \
             misses pages that were swapped out (wasmtime #14357)"
        } else {
            "unmapped when freed (this kernel has no PAGEMAP_SCAN)"
        }
    );
    println!("compile cache: {}", location(&cache).unwrap_or_else(|| "none (no cache directory)".into()));
    println!("session store: {}", location(&store).unwrap_or_else(|| "none (set WREPL_STORE or HOME)".into()));
    Ok(ExitCode::SUCCESS)
}
