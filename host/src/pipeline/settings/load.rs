//! Loading a settings file: reading it, checking that every struct level
//! is a JSON object, deserializing and validating it.

use std::path::Path;

use super::{Settings, SettingsError};

impl Settings {
    /// Read, parse and validate a settings file.
    pub fn load(path: impl AsRef<Path>) -> Result<Settings, SettingsError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|source| SettingsError::Io { path: path.to_path_buf(), source })?;
        Settings::from_json(&text).map_err(|e| SettingsError::File { path: path.to_path_buf(), source: Box::new(e) })
    }

    /// Parse and validate settings from JSON text.
    pub fn from_json(json: &str) -> Result<Settings, SettingsError> {
        // serde would read a JSON array into a struct positionally
        // (`[{"allow": ["Bash"]}]` as permissions): every level that is a
        // struct must be a JSON object.
        let value: serde_json::Value = serde_json::from_str(json)?;
        require_objects(&value)?;
        let settings: Settings = serde_json::from_value(value)?;
        settings.validate()?;
        Ok(settings)
    }

    /// Check everything that can be checked statically: permission rules
    /// parse, hook matchers compile, hook commands are not empty, timeouts
    /// are in range, isolation patterns parse (each by the pipeline module
    /// that gives the data meaning). [`Settings::load`] and
    /// [`Settings::from_json`] already call this; call it again after
    /// building or changing settings in code.
    pub fn validate(&self) -> Result<(), SettingsError> {
        super::super::validate_settings(self)
    }
}

/// Check that each part of the settings that is a struct is a JSON object
/// (the root, `permissions`, `hooks`, `isolation`, each matcher group and
/// each hook), naming the first that is not.
fn require_objects(root: &serde_json::Value) -> Result<(), SettingsError> {
    use serde_json::Value;
    fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
    let object = |v: &Value, field: &str| -> Result<(), SettingsError> {
        if v.is_object() {
            Ok(())
        } else {
            let field = if field.is_empty() { "settings" } else { field };
            Err(SettingsError::invalid(field, format!("must be a JSON object, found {}", kind(v))))
        }
    };
    object(root, "")?;
    for key in ["permissions", "hooks", "isolation"] {
        if let Some(v) = root.get(key) {
            object(v, key)?;
        }
    }
    let Some(Value::Object(hooks)) = root.get("hooks") else { return Ok(()) };
    for (event, groups) in hooks {
        let Value::Array(groups) = groups else { continue };
        for (i, group) in groups.iter().enumerate() {
            object(group, &format!("hooks.{event}[{i}]"))?;
            let Some(Value::Array(list)) = group.get("hooks") else { continue };
            for (j, hook) in list.iter().enumerate() {
                object(hook, &format!("hooks.{event}[{i}].hooks[{j}]"))?;
            }
        }
    }
    Ok(())
}
