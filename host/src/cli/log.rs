//! `wrepl log`: list the sessions of a store, verify a session's hash chain,
//! and show a session's blocks (rendered by [`wrepl::replay::render`]).

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use wrepl::replay::render::render_log;
use wrepl::replay::store::LogStore;

use super::StoreArgs;

/// The subcommands of `wrepl log`.
#[derive(Subcommand)]
pub(crate) enum LogCommand {
    /// Print a session's blocks and inner calls.
    Show {
        /// Session name.
        name: String,
        /// Where the session is stored.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify a session's hash chain (exit 1 when it is broken).
    Verify {
        /// Session name.
        name: String,
        /// Where the session is stored.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List the sessions in the store.
    List {
        /// The store to list.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Run a `wrepl log` subcommand: exit 1 when `verify` finds the chain broken.
pub(crate) fn run(cmd: LogCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LogCommand::List { store } => {
            for s in store.open_store()?.sessions()? {
                println!("{}\t{} blocks\t{} events", s.name, s.blocks, s.events);
            }
            Ok(ExitCode::SUCCESS)
        }
        LogCommand::Verify { name, store } => {
            let r = store.open_store()?.verify(&name)?;
            if r.ok {
                println!("session {name}: {} events, hash chain intact", r.events);
                Ok(ExitCode::SUCCESS)
            } else {
                match r.first_bad {
                    Some(b) => println!("session {name}: TAMPERED at event {}: {}", b.seq, b.reason),
                    None => println!("session {name}: TAMPERED"),
                }
                Ok(ExitCode::from(1))
            }
        }
        LogCommand::Show { name, store } => {
            let events = store.open_store()?.load(&name)?;
            let mut out = std::io::stdout().lock();
            if events.is_empty() {
                writeln!(out, "session {name} has no blocks")?;
            }
            render_log(&events, &mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
