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

    /// Refuse a call that conflicts with the latched side.
    pub fn check(&self, tool: &str) -> Result<(), String> {
        if !self.settings.enabled {
            return Ok(());
        }
        let Some(side) = self.side(tool) else { return Ok(()) };
        match &*self.latched.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((latched, by)) if *latched != side => Err(format!(
                "isolation: this session already used {} tool {by}, so {} tool {tool} is refused",
                latched.name(),
                side.name()
            )),
            _ => Ok(()),
        }
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

    /// Record that an allowed call of `tool` is about to run.
    pub fn latch(&self, tool: &str) {
        if !self.settings.enabled {
            return;
        }
        if let Some(side) = self.side(tool) {
            let mut l = self.latched.lock().unwrap_or_else(|p| p.into_inner());
            if l.is_none() {
                *l = Some((side, tool.to_string()));
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
        assert!(l.check("mcp__mail__send").is_ok());
        assert!(l.check("Read").is_ok());
        l.latch("mcp__fetch__get");
        assert!(l.check("mcp__fetch__other").is_ok());
        let e = l.check("mcp__mail__send").unwrap_err();
        assert!(e.contains("isolation"), "{e}");
        let off = IsolationLatch::new(&IsolationSettings { enabled: false, ..s }).unwrap();
        off.latch("mcp__fetch__get");
        assert!(off.check("mcp__mail__send").is_ok());
    }
}
