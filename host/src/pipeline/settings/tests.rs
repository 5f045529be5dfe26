use std::path::Path;

use super::*;

#[test]
fn empty_and_full() {
    assert_eq!(Settings::from_json("{}").unwrap(), Settings::default());
    let s = Settings::from_json(
        r#"{
          "permissions": { "allow": ["Bash(git status:*)", "Read(./src/**)", "Write", "mcp__srv__tool"], "ask": [], "deny": [] },
          "hooks": {
            "PreToolUse": [ { "matcher": "Bash|Write", "hooks": [ { "type": "command", "command": "true", "timeout": 60, "onTimeout": "deny" } ] } ],
            "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 0.5, "onTimeout": "allow" } ] } ],
            "PostToolUseFailure": []
          },
          "isolation": { "enabled": true, "web": ["mcp__fetch__*"], "connectors": ["mcp__gmail"] }
        }"#,
    )
    .unwrap();
    assert_eq!(s.permissions.allow.len(), 4);
    let pre = &s.hooks.pre_tool_use[0];
    assert_eq!(pre.matcher.as_deref(), Some("Bash|Write"));
    assert_eq!(pre.hooks[0].on_timeout, OnTimeout::Deny);
    let post = &s.hooks.post_tool_use[0].hooks[0];
    assert_eq!(post.timeout_duration(), Duration::from_millis(500));
    assert_eq!(post.on_timeout, OnTimeout::Allow);
    assert!(s.isolation.enabled);
    assert_eq!(s.isolation.web, ["mcp__fetch__*"]);
    assert_eq!(s.isolation.connectors, ["mcp__gmail"]);
}

#[test]
fn defaults() {
    let s = Settings::from_json(r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x"}]}]}}"#).unwrap();
    let h = &s.hooks.pre_tool_use[0].hooks[0];
    assert_eq!(h.timeout, DEFAULT_HOOK_TIMEOUT_SECS);
    assert_eq!(h.on_timeout, OnTimeout::Deny);
    assert_eq!(h.timeout_duration(), Duration::from_secs(60));
    assert!(!s.isolation.enabled);
}

fn err(json: &str) -> String {
    Settings::from_json(json).unwrap_err().to_string()
}

#[test]
fn every_struct_level_must_be_an_object() {
    // An array is not read positionally: it grants nothing.
    let e = err(r#"[{"allow": ["Bash"]}]"#);
    assert_eq!(e, "settings: must be a JSON object, found an array");
    assert!(err(r#""Bash""#).contains("found a string"));
    assert!(err(r#"{"permissions": [["Bash"]]}"#).contains("permissions: must be a JSON object, found an array"));
    assert!(err(r#"{"isolation": [true]}"#).contains("isolation: must be a JSON object"));
    assert!(err(r#"{"hooks": []}"#).contains("hooks: must be a JSON object"));
    let e = err(r#"{"hooks": {"PreToolUse": [["Bash", []]]}}"#);
    assert!(e.contains("hooks.PreToolUse[0]: must be a JSON object"), "{e}");
    let e = err(r#"{"hooks": {"PreToolUse": [{"hooks": [["command", "rm -rf /"]]}]}}"#);
    assert!(e.contains("hooks.PreToolUse[0].hooks[0]: must be a JSON object"), "{e}");
}

#[test]
fn a_claude_code_settings_file_loads_with_warnings() {
    let json = r#"{
      "$schema": "https://json.schemastore.org/claude-code-settings.json",
      "env": {"FOO": "bar", "NODE_ENV": "test", "PATH": "/evil:/usr/bin", "BASH_ENV": "./x.sh", "N": 3},
      "model": "opus",
      "permissions": {
        "allow": ["Bash(git diff *)", "Bash(npm run test:*)", "Read(./src/**)", "WebFetch(domain:docs.rs)"],
        "ask": ["Write"],
        "deny": ["Read(./.env)", "WebSearch"],
        "additionalDirectories": ["../shared", "~/notes"],
        "defaultMode": "acceptEdits"
      },
      "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]
      }
    }"#;
    let c = Settings::from_claude_json(json, Path::new("/p")).unwrap();
    // WebFetch is a wrepl tool too (fetch()): its domain rules carry over.
    assert_eq!(
        c.settings.permissions.allow,
        ["Bash(git diff *)", "Bash(npm run test:*)", "Read(./src/**)", "WebFetch(domain:docs.rs)"]
    );
    assert_eq!(c.settings.permissions.ask, ["Write"]);
    assert_eq!(c.settings.permissions.deny, ["Read(./.env)"]);
    assert_eq!(c.settings.hooks.pre_tool_use.len(), 1);
    assert_eq!(c.roots[0], Path::new("/p/../shared"));
    let w = c.warnings.join("\n");
    for named in ["env: PATH", "env: BASH_ENV", "env.N", "model", "WebSearch", "acceptEdits", "hooks.Stop"] {
        assert!(w.contains(named), "{named} is named: {w}");
    }
    assert!(!w.contains("$schema"), "{w}");
    assert_eq!(c.warnings.len(), 7, "{w}");
    // The variables that change nothing but themselves are kept.
    let env: Vec<(&str, &str)> = c.settings.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(env, [("FOO", "bar"), ("NODE_ENV", "test")]);
    // wrepl's own keys keep their meaning beside Claude Code's.
    let c = Settings::from_claude_json(r#"{"$schema": "claude", "confine": "require"}"#, Path::new("/p")).unwrap();
    assert_eq!(c.settings.confine, ConfineMode::Require);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // What wrepl does check still fails: a malformed rule list.
    assert!(Settings::from_claude_json(r#"{"permissions": {"allow": "Bash"}}"#, Path::new("/p")).is_err());
}

#[test]
fn env_refuses_what_changes_which_program_runs() {
    let s = Settings::from_json(r#"{"env": {"RUST_LOG": "debug", "API_URL": "http://localhost"}}"#).unwrap();
    assert_eq!(s.env.len(), 2);
    for (name, why) in [
        ("PATH", "which program runs"),
        ("LD_PRELOAD", "which program runs"),
        ("BASH_FUNC_ls%%", "not a variable name"),
        ("BASH_ENV", "which program runs"),
        ("bash_env", "which program runs"),
        ("GIT_CONFIG_COUNT", "which program runs"),
        ("GIT_SSH_COMMAND", "which program runs"),
        ("WREPL_PROJECT_DIR", "which program runs"),
        ("1X", "not a variable name"),
        ("A=B", "not a variable name"),
    ] {
        let e = err(&format!(r#"{{"env": {{{}: "x"}}}}"#, serde_json::to_string(name).unwrap()));
        assert!(e.starts_with(&format!("env.{name}:")) && e.contains(why), "{name}: {e}");
    }
    let e = err(r#"{"env": {"A": "x\u0000y"}}"#);
    assert!(e.contains("NUL"), "{e}");
    assert!(err(r#"{"env": {"A": 1}}"#).contains("invalid type"));
}

#[test]
fn unknown_fields_rejected() {
    assert!(err(r#"{"permission": {}}"#).contains("unknown field `permission`"));
    assert!(err(r#"{"permissions": {"denny": []}}"#).contains("unknown field `denny`"));
    assert!(err(r#"{"hooks": {"PreToolUse": [{"hooks": [], "match": "x"}]}}"#).contains("unknown field `match`"));
    assert!(err(r#"{"hooks": {"Stop": []}}"#).contains("unknown field `Stop`"));
    assert!(err(r#"{"isolation": {"enable": true}}"#).contains("unknown field `enable`"));
    assert!(err(r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","time":1}]}]}}"#)
        .contains("unknown field `time`"));
}

#[test]
fn field_errors_name_the_field() {
    let hook = |extra: &str| {
        err(&format!(
            r#"{{"hooks":{{"PostToolUse":[{{"hooks":[{{"type":"command","command":"x"}}]}},
               {{"matcher":"Bash","hooks":[{{"type":"command","command":"x"}}, {{{extra}}}]}}]}}}}"#
        ))
    };
    let e = hook(r#""type":"command","command":"x","timeout":0"#);
    assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].timeout:"), "{e}");
    let e = hook(r#""type":"command","command":"x","timeout":601"#);
    assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].timeout:"), "{e}");
    let e = hook(r#""type":"command","command":"x","timeout":"5""#);
    assert!(e.contains("timeout:"), "{e}");
    let e = hook(r#""type":"command","command":"  ""#);
    assert!(e.starts_with("hooks.PostToolUse[1].hooks[1].command:"), "{e}");
    let e = hook(r#""type":"prompt","command":"x""#);
    assert!(e.contains("type: expected \"command\""), "{e}");
    let e = hook(r#""type":"command","command":"x","onTimeout":"maybe""#);
    assert!(e.contains("onTimeout: expected \"deny\" or \"allow\""), "{e}");
    let e = hook(r#""command":"x""#);
    assert!(e.contains("missing field `type`"), "{e}");

    let e = err(r#"{"hooks":{"PreToolUse":[{"matcher":"Bash(","hooks":[]}]}}"#);
    assert!(e.starts_with("hooks.PreToolUse[0].matcher: invalid regex"), "{e}");
    let e = err(r#"{"permissions":{"deny":["Bash", "Bash(git"]}}"#);
    assert!(e.starts_with("permissions.deny[1]: invalid rule"), "{e}");
    let e = err(r#"{"isolation":{"web":["mcp__x__*y"]}}"#);
    assert!(e.starts_with("isolation.web[0]: invalid rule"), "{e}");
}

#[test]
fn confine_and_allow_net() {
    let s = Settings::default();
    assert_eq!((s.confine, s.allow_net), (ConfineMode::Prefer, false));
    let s = Settings::from_json(r#"{"confine": "require", "allowNet": true}"#).unwrap();
    assert_eq!((s.confine, s.allow_net), (ConfineMode::Require, true));
    assert_eq!(Settings::from_json(r#"{"confine": "off"}"#).unwrap().confine, ConfineMode::Off);
    let e = err(r#"{"confine": "strict"}"#);
    assert!(e.contains("confine: expected \"require\" or \"prefer\" or \"off\", got \"strict\""), "{e}");
    let e = err(r#"{"confine": true}"#);
    assert!(e.contains("confine:"), "{e}");
    let e = err(r#"{"allowNet": "yes"}"#);
    assert!(e.contains("allowNet:") && e.contains("invalid type"), "{e}");
    assert!(err(r#"{"allow_net": true}"#).contains("unknown field `allow_net`"));
    // The keys round-trip under their settings names.
    let v = serde_json::to_value(Settings::from_json(r#"{"confine": "off", "allowNet": true}"#).unwrap()).unwrap();
    assert_eq!((v["confine"].as_str(), v["allowNet"].as_bool()), (Some("off"), Some(true)));
}

#[test]
fn load_reports_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let e = Settings::load(&path).unwrap_err();
    assert!(matches!(e, SettingsError::Io { .. }));
    std::fs::write(&path, r#"{"permissions":{"allow":["Read("]}}"#).unwrap();
    let e = Settings::load(&path).unwrap_err().to_string();
    assert!(e.contains("settings.json") && e.contains("permissions.allow[0]"), "{e}");
    std::fs::write(&path, r#"{"permissions":{"allow":["Read"]}}"#).unwrap();
    assert_eq!(Settings::load(&path).unwrap().permissions.allow, ["Read"]);
}

/// Every message of the source chain once (what `{:#}` of anyhow prints).
fn chain(e: &SettingsError) -> String {
    let mut out = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        out = format!("{out}: {cause}");
        next = cause.source();
    }
    out
}

#[test]
fn reasons_are_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let reason = "unbalanced parentheses";
    std::fs::write(&path, r#"{"permissions":{"allow":["Bash(git"]}}"#).unwrap();
    let e = chain(&Settings::load(&path).unwrap_err());
    assert_eq!(e.matches(reason).count(), 1, "{e}");
    assert_eq!(e.matches("permissions.allow[0]").count(), 1, "{e}");
    std::fs::write(&path, r#"{"permissions":{"allow":[1]}}"#).unwrap();
    let e = chain(&Settings::load(&path).unwrap_err());
    assert_eq!(e.matches("invalid type").count(), 1, "{e}");
    let absent = dir.path().join("absent.json");
    let os_reason = std::fs::read(&absent).unwrap_err().to_string();
    let e = chain(&Settings::load(&absent).unwrap_err());
    assert_eq!(e.matches(&os_reason).count(), 1, "{e}");
}

#[test]
fn web_fetch_settings() {
    use crate::tools::web::PrivateNetwork;
    let s = Settings::default();
    assert_eq!(s.web_fetch.config(), crate::tools::web::WebConfig::default());
    let s = Settings::from_json(
        r#"{"webFetch": {"allowPrivateNetwork": ["127.0.0.1", "10.0.0.0/8"], "maxBodyBytes": 5, "timeoutMs": 7}}"#,
    )
    .unwrap();
    let c = s.web_fetch.config();
    assert_eq!(
        c.private_network,
        PrivateNetwork::Only(vec!["127.0.0.1/32".parse().unwrap(), "10.0.0.0/8".parse().unwrap()])
    );
    assert_eq!((c.max_body_bytes, c.timeout), (5, std::time::Duration::from_millis(7)));
    let all = Settings::from_json(r#"{"webFetch": {"allowPrivateNetwork": true}}"#).unwrap();
    assert_eq!(all.web_fetch.config().private_network, PrivateNetwork::All);
    let e = err(r#"{"webFetch": {"allowPrivateNetwork": ["localhost"]}}"#);
    assert!(e.contains("webFetch.allowPrivateNetwork") && e.contains("\"localhost\" is not a network"), "{e}");
    let e = err(r#"{"webFetch": {"allowPrivateNetwork": "yes"}}"#);
    assert!(e.contains("must be true, false or a list"), "{e}");
    assert!(err(r#"{"webFetch": {"maxBody": 1}}"#).contains("unknown field `maxBody`"));
}
