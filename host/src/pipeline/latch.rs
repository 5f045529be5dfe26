//! The isolation latch: when enabled, a session that touched web-content
//! tools may not then touch connector tools, and vice versa.

use std::sync::Mutex;

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

/// Latch state of one session.
#[derive(Debug)]
pub struct IsolationLatch {
    settings: IsolationSettings,
    latched: Mutex<Option<(Side, String)>>,
}

impl IsolationLatch {
    /// Build from settings (tool-name patterns, validated here).
    pub fn new(s: &IsolationSettings) -> Result<Self, SettingsError> {
        s.validate()?;
        Ok(Self { settings: s.clone(), latched: Mutex::new(None) })
    }

    fn side(&self, tool: &str) -> Option<Side> {
        if self.settings.is_web(tool) {
            Some(Side::Web)
        } else if self.settings.is_connector(tool) {
            Some(Side::Connector)
        } else {
            None
        }
    }

    /// The same settings, nothing latched yet.
    pub fn fresh(&self) -> Self {
        Self { settings: self.settings.clone(), latched: Mutex::new(None) }
    }

    /// Refuse a conflicting call, else latch its side, atomically.
    pub fn check_and_latch(&self, tool: &str) -> Result<(), String> {
        if !self.settings.enabled {
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

#[cfg(test)]
mod tests {
    use super::*;

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
