//! The Landlock ruleset of a confined command: writes only beneath the
//! writable directories and to a few character devices.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use super::launch::ConfineError;

/// Character devices commands may write (file rules).
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The Landlock ruleset: read and execute everywhere, every right beneath
/// `writable`, read and write on [`DEVICES`]; the signal and abstract-socket
/// scopes. Best effort: rights the kernel lacks are left out. `None` when
/// the kernel has no Landlock.
pub(super) fn ruleset(writable: &[PathBuf]) -> Result<Option<OwnedFd>, ConfineError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, Scope, ABI,
    };
    let abi = ABI::V7;
    let all = AccessFs::from_all(abi);
    let build = || -> Result<Option<OwnedFd>, RulesetError> {
        let created = Ruleset::default()
            .handle_access(all)?
            .scope(Scope::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(writable, all))?
            .add_rules(path_beneath_rules(DEVICES, all))?;
        Ok(created.into())
    };
    build().map_err(|e| ConfineError::Prepare(format!("Landlock ruleset: {e}")))
}
