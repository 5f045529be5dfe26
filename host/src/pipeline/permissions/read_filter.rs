//! The read filter: `Read` deny rules applied to what Glob and Grep walk
//! (and to where `Read` really opens a file).
//!
//! The dispatcher checks a call's named paths against the rules; a walk
//! reaches paths no input names (`Grep` with no `path`, `path: "."`, a
//! `glob`). So the workspace gets a [`PathFilter`] built here from the same
//! rules, matched by the same matcher ([`PermissionRules::evaluate`] with the
//! tool `Read`): a path a `Read` deny rule covers is hidden from every walk,
//! names and contents alike.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Decision, PermissionRequest, PermissionRules, RuleKinds};
use crate::pipeline::settings::{PermissionSettings, SettingsError};
use crate::tools::PathFilter;

/// The tool whose deny rules filter walks.
const READ: &str = "Read";

/// Build the read filter of a rule configuration: `permissions` (a settings
/// file's lists) plus the extra `allow` and `deny` rules (`--allow`,
/// `--deny`), for tools of rule kinds `kinds`; relative rule globs are
/// anchored at `project_root`, as the dispatcher anchors them.
///
/// `Ok(None)` when there is no deny rule at all (nothing to hide). The whole
/// configuration is parsed the way the dispatcher parses it, so an invalid
/// rule is the same error here; the filter itself holds only the deny rules.
pub fn read_deny_filter(
    permissions: &PermissionSettings,
    allow: &[String],
    deny: &[String],
    kinds: RuleKinds,
    project_root: &Path,
) -> Result<Option<PathFilter>, SettingsError> {
    // Parse everything first, exactly as the dispatcher does (same errors).
    let mut full = PermissionRules::from_settings_for(permissions, kinds.clone())?;
    for r in allow {
        full.add_allow(r)?;
    }
    for r in deny {
        full.add_deny(r)?;
    }
    drop(full);
    if permissions.deny.is_empty() && deny.is_empty() {
        return Ok(None);
    }
    let only_deny = PermissionSettings { allow: Vec::new(), ask: Vec::new(), deny: permissions.deny.clone() };
    let mut rules = PermissionRules::from_settings_for(&only_deny, kinds)?;
    for r in deny {
        rules.add_deny(r)?;
    }
    Ok(Some(filter_of(Arc::new(rules), project_root.to_path_buf())))
}

/// The filter over compiled `rules`: a path may be read unless a `Read`
/// deny rule matches it.
fn filter_of(rules: Arc<PermissionRules>, root: PathBuf) -> PathFilter {
    Arc::new(move |path: &Path| {
        let paths = [path.to_path_buf()];
        let req = PermissionRequest { tool: READ, command: None, paths: &paths, project_root: &root };
        // Fail closed: anything but "no deny rule matched" hides the path.
        rules.evaluate(&req).is_none_or(|m| m.decision != Decision::Deny)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(settings_deny: &[&str], extra_deny: &[&str]) -> Option<PathFilter> {
        let permissions = PermissionSettings {
            allow: vec!["Read(./**)".into()],
            ask: Vec::new(),
            deny: settings_deny.iter().map(|s| s.to_string()).collect(),
        };
        let extra: Vec<String> = extra_deny.iter().map(|s| s.to_string()).collect();
        read_deny_filter(&permissions, &[], &extra, RuleKinds::builtin(), Path::new("/proj")).unwrap()
    }

    #[test]
    fn read_deny_rules_hide_paths() {
        let f = filter(&["Read(secret/**)"], &["Read(*.pem)", "Bash(rm:*)", "Write(./out/**)"]).unwrap();
        for hidden in ["/proj/secret/a", "/proj/secret/x/y.txt", "/proj/k.pem", "/proj/deep/dir/k.pem"] {
            assert!(!f(Path::new(hidden)), "{hidden}");
        }
        // Only Read rules filter; other paths stay readable.
        for visible in ["/proj/a.txt", "/proj/secretx/a", "/proj/out/x", "/other/secret/a", "/proj/pem"] {
            assert!(f(Path::new(visible)), "{visible}");
        }
        // The directory itself: its contents are hidden (probed with a child).
        assert!(!f(&Path::new("/proj/secret").join(crate::tools::workspace::PROBE_CHILD)));
    }

    #[test]
    fn whole_tool_deny_hides_everything_and_no_rules_need_no_filter() {
        let f = filter(&[], &["Read"]).unwrap();
        assert!(!f(Path::new("/proj/a.txt")) && !f(Path::new("/anything")));
        assert!(filter(&[], &[]).is_none());
        // Deny rules of other tools build a filter that hides nothing.
        let f = filter(&["Bash"], &[]).unwrap();
        assert!(f(Path::new("/proj/a.txt")));
    }

    #[test]
    fn invalid_rules_are_errors() {
        let permissions = PermissionSettings::default();
        let bad = ["Read(../x)".to_string()];
        assert!(read_deny_filter(&permissions, &[], &bad, RuleKinds::builtin(), Path::new("/p")).is_err());
        assert!(read_deny_filter(&permissions, &bad, &[], RuleKinds::builtin(), Path::new("/p")).is_err());
    }
}
