//! One budget: the script-time budget an evaluation asks for (`--timeout`,
//! the MCP `timeout` argument, [`crate::EvalOptions::timeout`]), checked and
//! clamped in one place, and the hard limit every clock in wrepl stops at
//! (an evaluation's wall clock, the longest script budget, Bash timeout or
//! hook timeout).

use std::time::Duration;

/// The hard limit: an evaluation's wall clock, and the most any script
/// budget, Bash timeout or hook timeout may ask for (larger requests are
/// clamped to it).
pub const HARD_LIMIT: Duration = Duration::from_secs(600);

/// The script budget of an evaluation that asks for none.
pub const DEFAULT_SCRIPT_BUDGET: Duration = Duration::from_secs(30);

/// [`HARD_LIMIT`] in milliseconds, for messages and schemas.
pub fn hard_limit_ms() -> u64 {
    HARD_LIMIT.as_millis() as u64
}

/// A script budget that was asked for and is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BudgetError(String);

/// The budgets of one evaluation: the script time it may use (guest
/// execution; paused while inner calls run) and its hard wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Guest execution time allowed (paused while inner calls run).
    pub script: Duration,
    /// Hard wall-clock limit for the whole evaluation.
    pub wall: Duration,
}

impl Default for Budget {
    /// The default script budget under the hard wall clock.
    fn default() -> Self {
        Self { script: DEFAULT_SCRIPT_BUDGET, wall: HARD_LIMIT }
    }
}

impl Budget {
    /// A script budget of `script` (zero is refused; more than
    /// [`HARD_LIMIT`] is clamped) under the hard wall clock; `None` gives the
    /// default.
    pub fn script(script: Option<Duration>) -> Result<Self, BudgetError> {
        match script {
            None => Ok(Self::default()),
            Some(d) if d.is_zero() => Err(BudgetError("timeout must be positive".into())),
            Some(d) => Ok(Self { script: d.min(HARD_LIMIT), wall: HARD_LIMIT }),
        }
    }

    /// A script budget of `ms` milliseconds (rounded up; more than
    /// [`HARD_LIMIT`] is clamped; zero, negative and non-finite values are
    /// refused).
    pub fn from_ms(ms: f64) -> Result<Duration, BudgetError> {
        if !ms.is_finite() || ms <= 0.0 {
            return Err(BudgetError(format!(
                "timeout must be a positive number of milliseconds (at most {}), got {ms}",
                hard_limit_ms()
            )));
        }
        Ok(Duration::from_millis(ms.ceil().min(hard_limit_ms() as f64) as u64))
    }

    /// A script budget given as JSON (the MCP `timeout` argument): absent or
    /// `null` gives the default; otherwise as [`Budget::from_ms`].
    pub fn from_json(value: Option<&serde_json::Value>) -> Result<Duration, BudgetError> {
        let Some(v) = value.filter(|v| !v.is_null()) else {
            return Ok(DEFAULT_SCRIPT_BUDGET);
        };
        let Some(ms) = v.as_f64() else {
            return Err(BudgetError(format!(
                "timeout must be a number of milliseconds (1..={}), got {v}",
                hard_limit_ms()
            )));
        };
        Self::from_ms(ms)
    }

    /// A script budget given as command-line text (`--timeout MS`).
    pub fn from_flag(text: &str) -> Result<Duration, BudgetError> {
        let ms: f64 = text
            .trim()
            .parse()
            .map_err(|_| BudgetError(format!("--timeout must be a number of milliseconds, got {text:?}")))?;
        Self::from_ms(ms)
    }
}

/// The help text of a `--timeout` flag.
pub fn timeout_help(what: &str) -> String {
    format!(
        "Script time budget per {what} in milliseconds (default {}, max {})",
        DEFAULT_SCRIPT_BUDGET.as_millis(),
        hard_limit_ms()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn budgets_validate_and_clamp() {
        assert_eq!(Budget::from_json(None).unwrap(), Duration::from_secs(30));
        assert_eq!(Budget::from_json(Some(&json!(null))).unwrap(), Duration::from_secs(30));
        assert_eq!(Budget::from_json(Some(&json!(1500))).unwrap(), Duration::from_millis(1500));
        assert_eq!(Budget::from_json(Some(&json!(0.5))).unwrap(), Duration::from_millis(1));
        assert_eq!(Budget::from_json(Some(&json!(10_000_000))).unwrap(), Duration::from_millis(600_000));
        for bad in [json!(0), json!(-5), json!("100"), json!(true)] {
            assert!(Budget::from_json(Some(&bad)).is_err(), "{bad}");
        }
        assert_eq!(Budget::from_flag(" 250 ").unwrap(), Duration::from_millis(250));
        assert!(Budget::from_flag("abc").unwrap_err().to_string().contains("--timeout must be a number"));
        assert!(Budget::from_ms(f64::NAN).is_err());
        assert_eq!(Budget::script(None).unwrap(), Budget::default());
        assert!(Budget::script(Some(Duration::ZERO)).is_err());
        assert_eq!(Budget::script(Some(Duration::from_secs(9_999))).unwrap().script, HARD_LIMIT);
        assert_eq!(Budget::default().wall, Duration::from_secs(600));
    }
}
