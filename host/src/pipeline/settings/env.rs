//! The variables the settings' `env` may set for Bash commands and hooks:
//! [`env_refusal`] names those that would change what runs.

/// Why the variable `name=value` may not be set for Bash commands and hooks,
/// or `None` when it may.
///
/// Refused: names that are not plain identifiers; values with a NUL byte;
/// the loader's and the shell's own variables (`LD_*`, `BASH_*` including
/// exported functions, `ENV`, `SHELLOPTS`, `IFS`, `PS4`, ...); where programs
/// are found or what runs them (`PATH`, `HOME`, `SHELL`, `TMPDIR`, pagers and
/// editors, interpreters' start-up options, git's programs and config);
/// and wrepl's own (`WREPL_*`).
pub fn env_refusal(name: &str, value: &str) -> Option<String> {
    let ident = name.chars().next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !ident {
        return Some(format!("{name:?} is not a variable name (letters, digits and _)"));
    }
    if value.contains('\0') {
        return Some(format!("{name}'s value contains a NUL byte"));
    }
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_", "BASH", "WREPL_", "GIT_CONFIG"];
    const NAMES: &[&str] = &[
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "PATH",
        "HOME",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "GCONV_PATH",
        "HOSTALIASES",
        "LOCPATH",
        "NLSPATH",
        "MALLOC_CHECK_",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
        "MANPAGER",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_EXEC_PATH",
        "GIT_EXTERNAL_DIFF",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_TEMPLATE_DIR",
        "GIT_PROXY_COMMAND",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ];
    let upper = name.to_ascii_uppercase();
    if NAMES.contains(&upper.as_str()) || PREFIXES.iter().any(|p| upper.starts_with(p)) {
        return Some(format!(
            "{name} is not set: it would change which program runs or what a shell does before the command, \
             which Bash rules and hooks cannot see"
        ));
    }
    None
}
