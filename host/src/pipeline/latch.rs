//! The isolation latch: when enabled, a session that touched web-content
//! tools may not then touch connector tools, and vice versa. It owns the
//! meaning of the `isolation` settings: their tool-name patterns are parsed
//! (and so validated) here.

use std::sync::Mutex;

use super::permissions::ToolPattern;
use super::settings::{IsolationSettings, SettingsError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Web,
    Connector,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Web => "web-content",
            Side::Connector => "connector",
        }
    }
}

/// The parsed `isolation` settings.
#[derive(Debug, Clone)]
struct Classes {
    enabled: bool,
    web: Vec<ToolPattern>,
    connectors: Vec<ToolPattern>,
}

/// Latch state of one session.
#[derive(Debug)]
pub struct IsolationLatch {
    classes: Classes,
    latched: Mutex<Option<(Side, String)>>,
}

impl IsolationLatch {
    /// Build from settings (tool-name patterns, validated here).
    pub fn new(s: &IsolationSettings) -> Result<Self, SettingsError> {
        let classes =
            Classes { enabled: s.enabled, web: parse(&s.web, "web")?, connectors: parse(&s.connectors, "connectors")? };
        Ok(Self { classes, latched: Mutex::new(None) })
    }

    /// Check every pattern of the settings without building a latch. An
    /// error names the pattern's field, e.g. `isolation.web[0]`.
    pub fn validate(s: &IsolationSettings) -> Result<(), SettingsError> {
        Self::new(s).map(drop)
    }

    /// True when `tool` matches a `web` pattern.
    fn is_web(&self, tool: &str) -> bool {
        self.classes.web.iter().any(|p| p.matches(tool))
    }

    /// True when `tool` matches a `connectors` pattern.
    fn is_connector(&self, tool: &str) -> bool {
        self.classes.connectors.iter().any(|p| p.matches(tool))
    }

    fn side(&self, tool: &str) -> Option<Side> {
        if self.is_web(tool) {
            Some(Side::Web)
        } else if self.is_connector(tool) {
            Some(Side::Connector)
        } else {
            None
        }
    }

    /// The same settings, nothing latched yet.
    pub fn fresh(&self) -> Self {
        Self { classes: self.classes.clone(), latched: Mutex::new(None) }
    }

    /// Refuse a conflicting call, else latch its side, atomically.
    pub fn check_and_latch(&self, tool: &str) -> Result<(), String> {
        if !self.classes.enabled {
            return Ok(());
        }
        let Some(side) = self.side(tool) else { return Ok(()) };
        let mut l = self.latched.lock().unwrap_or_else(|p| p.into_inner());
        match &*l {
            Some((latched, by)) if *latched != side => Err(format!(
                "isolation: this session already used {} tool {by}, so {} tool {tool} is refused",
                latched.name(),
                side.name()
            )),
            Some(_) => Ok(()),
            None => {
                *l = Some((side, tool.to_string()));
                Ok(())
            }
        }
    }
}

/// Parse the patterns of `isolation.<list>`.
fn parse(patterns: &[String], list: &str) -> Result<Vec<ToolPattern>, SettingsError> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            ToolPattern::parse(p).map_err(|reason| SettingsError::InvalidRule {
                field: format!("isolation.{list}[{i}]"),
                rule: p.clone(),
                reason,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::settings::Settings;

    #[test]
    fn classes_from_settings() {
        let s = Settings::from_json(
            r#"{"isolation": { "enabled": true, "web": ["mcp__fetch__*"], "connectors": ["mcp__gmail"] }}"#,
        )
        .unwrap();
        let l = IsolationLatch::new(&s.isolation).unwrap();
        assert!(l.is_web("mcp__fetch__get"));
        assert!(!l.is_web("mcp__fetcher__get"));
        assert!(l.is_connector("mcp__gmail__send"));
        assert!(!l.is_connector("Bash"));
        let e = IsolationLatch::new(&IsolationSettings { connectors: vec!["ok".into(), "x*".into()], ..s.isolation })
            .unwrap_err();
        assert!(e.to_string().starts_with("isolation.connectors[1]: invalid rule \"x*\""), "{e}");
    }

    #[test]
    fn latches_one_side() {
        let s = IsolationSettings {
            enabled: true,
            web: vec!["mcp__fetch__*".into()],
            connectors: vec!["mcp__mail__*".into()],
        };
        let l = IsolationLatch::new(&s).unwrap();
        assert!(l.check_and_latch("Read").is_ok());
        assert!(l.check_and_latch("mcp__fetch__get").is_ok());
        assert!(l.check_and_latch("mcp__fetch__other").is_ok());
        let e = l.check_and_latch("mcp__mail__send").unwrap_err();
        assert!(e.contains("isolation"), "{e}");
        // a refused call does not move the latch; a fresh latch starts over
        assert!(l.check_and_latch("mcp__fetch__again").is_ok());
        let f = l.fresh();
        assert!(f.check_and_latch("mcp__mail__send").is_ok());
        assert!(f.check_and_latch("mcp__fetch__get").is_err());
        let off = IsolationLatch::new(&IsolationSettings { enabled: false, ..s }).unwrap();
        assert!(off.check_and_latch("mcp__fetch__get").is_ok());
        assert!(off.check_and_latch("mcp__mail__send").is_ok());
    }
}
