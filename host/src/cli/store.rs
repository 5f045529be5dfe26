//! `wrepl store`: operations on a whole session store, SQLite or
//! PostgreSQL alike: create or migrate its schema, verify every session,
//! remove sessions unused for a while, and copy sessions between stores.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use wrepl::replay::store::LogStore;
use wrepl::text::terminal_safe;

use super::StoreArgs;

/// The subcommands of `wrepl store`.
#[derive(Subcommand)]
pub(crate) enum StoreCommand {
    /// Create the store's schema, or migrate it to this build's version
    /// (servers do the same at start, under a lock).
    Migrate {
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify every session's hash chain and head (exit 1 when any is broken).
    Verify {
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Remove the snapshots no session's log can use (those of sessions that are gone, and all but
    /// the newest few a log names), and with --older-than the sessions unused for longer than a
    /// duration (`90s`, `30m`, `12h`, `7d`). A session a live writer holds is kept.
    Gc {
        /// How long a session must have been unused to be removed.
        #[arg(long, value_name = "DURATION", value_parser = parse_age)]
        older_than: Option<Duration>,
        /// Only say what would be removed.
        #[arg(long)]
        dry_run: bool,
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Copy every session of the store FROM (a file or URL) into the store
    /// given with --store (sessions already there are left alone and
    /// reported; a session that does not verify is not copied).
    Copy {
        /// The store to copy from (a SQLite file or a postgres:// URL).
        from: String,
        /// The store to copy into.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// `90s`, `30m`, `12h`, `7d` (or a number of seconds).
fn parse_age(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: give a whole number and a unit (s, m, h, d), e.g. 7d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("{s:?}: the unit must be s, m, h or d")),
    };
    n.checked_mul(secs).map(Duration::from_secs).ok_or_else(|| format!("{s:?} is too long"))
}

/// Run a `wrepl store` subcommand.
pub(crate) fn run(cmd: StoreCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        StoreCommand::Migrate { store } => {
            let s = store.open_store()?;
            println!("store ready: {} session(s)", s.sessions()?.len());
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Verify { store } => {
            let s = store.open_existing_store()?;
            let mut broken = 0;
            let sessions = s.sessions()?;
            for info in &sessions {
                let r = s.verify(&info.name)?;
                if let Some(bad) = r.first_bad.filter(|_| !r.ok) {
                    broken += 1;
                    println!(
                        "{}: BROKEN at event {}: {}",
                        terminal_safe(&info.name),
                        bad.seq,
                        terminal_safe(&bad.reason)
                    );
                }
            }
            println!("{} session(s) verified, {broken} broken", sessions.len());
            Ok(if broken == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        StoreCommand::Gc { older_than, dry_run, store } => {
            let s = store.open_existing_store()?;
            if let Some(older_than) = older_than {
                gc_sessions(&*s, older_than, dry_run)?;
            }
            gc_snapshots(&*s, dry_run)?;
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Copy { from, store } => {
            let source = StoreArgs::at(&from).open_existing_store()?;
            let dest = store.open_store()?;
            copy(&*source, &dest)
        }
    }
}

/// Remove the sessions unused for longer than `older_than`.
fn gc_sessions(s: &dyn LogStore, older_than: Duration, dry_run: bool) -> anyhow::Result<()> {
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let cutoff = now.saturating_sub(older_than.as_millis() as u64);
    let (mut removed, mut kept) = (0, 0);
    for info in s.sessions()? {
        let used = s.touched(&info.name)?.unwrap_or(0).max(info.created_at_ms);
        if used >= cutoff {
            continue;
        }
        if dry_run {
            println!("would remove {}", terminal_safe(&info.name));
            removed += 1;
            continue;
        }
        match s.delete(&info.name) {
            Ok(()) => {
                println!("removed {}", terminal_safe(&info.name));
                removed += 1;
            }
            Err(e) => {
                println!("kept {}: {}", terminal_safe(&info.name), terminal_safe(&e.to_string()));
                kept += 1;
            }
        }
    }
    println!("{removed} session(s) {}, {kept} kept", if dry_run { "to remove" } else { "removed" });
    Ok(())
}

/// Remove the snapshots no log can use: those of sessions that are gone,
/// those their log does not name, and all but the newest few it does.
fn gc_snapshots(s: &dyn LogStore, dry_run: bool) -> anyhow::Result<()> {
    use wrepl::replay::snapshots;
    let (mut count, mut bytes) = (0u64, 0u64);
    for session in s.snapshot_sessions()? {
        let stored = s.snapshots(&session)?;
        let events = s.load(&session)?;
        let named = snapshots::refs(&events);
        let keep: Vec<&str> = named.iter().rev().take(snapshots::KEEP).map(|r| r.digest.as_str()).collect();
        let stale: Vec<_> = stored.into_iter().filter(|x| !keep.contains(&x.digest.as_str())).collect();
        if stale.is_empty() {
            continue;
        }
        count += stale.len() as u64;
        bytes += stale.iter().map(|x| x.bytes).sum::<u64>();
        if !dry_run {
            s.delete_snapshots(&session, &stale.iter().map(|x| x.digest.clone()).collect::<Vec<_>>())?;
        }
    }
    println!("{count} unreachable snapshot(s) ({bytes} bytes) {}", if dry_run { "to remove" } else { "removed" });
    Ok(())
}

fn copy(source: &dyn LogStore, dest: &Arc<dyn LogStore>) -> anyhow::Result<ExitCode> {
    let there: std::collections::HashSet<String> = dest.sessions()?.into_iter().map(|s| s.name).collect();
    let (mut copied, mut skipped, mut refused) = (0, 0, 0);
    for info in source.sessions()? {
        let name = terminal_safe(&info.name).into_owned();
        if there.contains(&info.name) {
            println!("{name}: already in the destination, left alone");
            skipped += 1;
            continue;
        }
        let report = source.verify(&info.name)?;
        if !report.ok {
            println!("{name}: does not verify, not copied");
            refused += 1;
            continue;
        }
        let events: Vec<_> = source.load(&info.name)?.into_iter().map(|e| (e.block, e.event)).collect();
        let stored = dest.append(&info.name, &events)?;
        // The chain is recomputed in the destination: it must verify there too.
        if !dest.verify(&info.name)?.ok || stored.len() != events.len() {
            anyhow::bail!("{name}: the copy does not verify in the destination");
        }
        if let Some(at) = source.touched(&info.name)? {
            dest.touch(&info.name, at)?;
        }
        println!("{name}: {} events copied", events.len());
        copied += 1;
    }
    println!("{copied} copied, {skipped} already there, {refused} not copied (broken)");
    Ok(if refused == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::parse_age;

    #[test]
    fn ages_parse_with_their_units() {
        assert_eq!(parse_age("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_age("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_age("7d").unwrap().as_secs(), 7 * 86400);
        assert_eq!(parse_age("12").unwrap().as_secs(), 12);
        assert!(parse_age("7w").is_err());
        assert!(parse_age("d").is_err());
    }
}
