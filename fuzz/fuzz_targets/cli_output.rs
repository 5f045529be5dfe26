//! What the command line prints and reads: the terminal sanitizer
//! (`wrepl::text::terminal_safe`) and the settings loader (`Settings::from_json`).
//! Invariants:
//! - sanitized text holds no control character but `\n` and `\t` (so no
//!   escape sequence can reach the terminal), keeps every other character in
//!   order, and is the input itself when nothing needed escaping;
//! - the settings loader never panics; settings it accepts came from a JSON
//!   object, pass `validate`, and read back equal from their own JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wrepl::{Settings, text::terminal_safe};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let safe = terminal_safe(&text);
    assert!(!safe.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "a control character got through: {safe:?}");
    let kept: String = text.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect();
    let mut rest = safe.as_ref();
    for c in kept.chars() {
        let at = rest.find(c).unwrap_or_else(|| panic!("{c:?} was lost: {text:?} -> {safe:?}"));
        rest = &rest[at + c.len_utf8()..];
    }
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        assert_eq!(safe.as_ref(), text.as_ref());
    }

    if let Ok(settings) = Settings::from_json(&text) {
        let value: serde_json::Value = serde_json::from_str(&text).expect("accepted settings are JSON");
        assert!(value.is_object(), "settings accepted from a non-object: {text}");
        settings.validate().expect("accepted settings validate");
        let again = serde_json::to_string(&settings).expect("settings serialize");
        assert_eq!(Settings::from_json(&again).expect("settings read back"), settings, "{again}");
    }
});
