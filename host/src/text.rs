//! Text caps and truncation, shared by the layers: every cut lands on a
//! char boundary, and a capped text says how much was cut.

/// Default cap on a result's text, in characters.
pub const DEFAULT_TEXT_CAP: usize = 100_000;

/// Largest index `<= i` that is a char boundary of `s` (`s.len()` if `i` is past the end).
pub(crate) fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a char boundary.
pub(crate) fn prefix(s: &str, max_bytes: usize) -> &str {
    &s[..floor_char_boundary(s, max_bytes)]
}

/// Cap `text` at `cap` characters, with a marker saying how much was cut.
pub fn cap_text(text: String, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text,
        Some((cut, _)) => {
            let total = text.chars().count();
            let mut t = text[..cut].to_string();
            t.push_str(&format!("\n…[truncated: showing {cap} of {total} characters]"));
            t
        }
    }
}

/// [`cap_text`] for a text that stands for a longer one: when cut, the
/// marker gives `total` (at least the text's own length) as the whole length.
pub fn cap_text_of(text: String, cap: usize, total: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text,
        Some((cut, _)) => {
            let total = total.max(text.chars().count());
            let mut t = text[..cut].to_string();
            t.push_str(&format!("\n…[truncated: showing {cap} of {total} characters]"));
            t
        }
    }
}

/// Text made safe to print on a terminal: every C0 control character but
/// `\n` and `\t`, DEL and every C1 control character is shown escaped
/// (ESC as `\x1b`, U+009B as `\u{9b}`), so output cannot move the cursor,
/// set the window title, write the clipboard (OSC 52) or clear the screen.
/// A backslash is left as it is. Borrowed when nothing needed escaping.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    let Some(first) = text.find(unsafe_char) else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`terminal_safe`], except that colour sequences (SGR: `ESC [` digits and
/// `;` then `m`, at most 32 bytes) pass: for text whose colours are wanted
/// (the terminal REPL's values). Every other control character is escaped,
/// so the text can only change colours, never move the cursor, set the
/// title or reach the clipboard.
pub fn terminal_safe_colors(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&terminal_safe(&rest[..at]));
        let tail = &rest[at + 1..];
        let params = tail.strip_prefix('[').map(|t| t.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count());
        match params {
            Some(n) if n <= 32 && tail.as_bytes().get(1 + n) == Some(&b'm') => {
                out.push_str(&rest[at..at + 3 + n]);
                rest = &rest[at + 3 + n..];
            }
            _ => {
                out.push_str("\\x1b");
                rest = tail;
            }
        }
    }
    out.push_str(&terminal_safe(rest));
    out
}

/// The first line of a panic's message, cut to 200 characters, for an error
/// that reaches the model or a log line (a panic message can be megabytes
/// long). Not escaped: callers printing to a terminal escape it.
pub fn panic_line(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}… ({} bytes)", &line[..i], text.len()),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_colour_sequences_pass() {
        assert_eq!(terminal_safe_colors("\x1b[33m1\x1b[39m"), "\x1b[33m1\x1b[39m");
        assert_eq!(terminal_safe_colors("a\x1b]52;c;eA==\x07b"), "a\\x1b]52;c;eA==\\x07b");
        assert_eq!(terminal_safe_colors("\x1b[2J\x1b[1;31m\r"), "\\x1b[2J\x1b[1;31m\\x0d");
        assert_eq!(terminal_safe_colors("\x1b["), "\\x1b[");
        assert_eq!(terminal_safe_colors("\x1b"), "\\x1b");
        assert_eq!(terminal_safe_colors("x\ny\x1b[0m"), "x\ny\x1b[0m");
    }

    #[test]
    fn cuts_land_on_char_boundaries() {
        assert_eq!(prefix("héllo", 2), "h");
        assert_eq!(prefix("héllo", 3), "hé");
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(cap_text("abc".into(), 5), "abc");
        let t = cap_text("é".repeat(10), 4);
        assert!(t.starts_with("éééé\n…[truncated: showing 4 of 10 characters]"));
    }

    #[test]
    fn terminal_text_has_no_control_sequences() {
        assert!(matches!(terminal_safe("plain\ttext\nline ✓"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(terminal_safe("\x1b]52;c;aGk=\x07"), "\\x1b]52;c;aGk=\\x07");
        assert_eq!(terminal_safe("a\x1b[2Jb\r\x7f"), "a\\x1b[2Jb\\x0d\\x7f");
        assert_eq!(terminal_safe("\u{9b}31m\u{85}"), "\\u{9b}31m\\u{85}");
        assert_eq!(terminal_safe("back\\slash"), "back\\slash");
        // Nothing a terminal interprets survives.
        for c in (0u32..0x110000).filter_map(char::from_u32).filter(|c| c.is_control() && !matches!(c, '\n' | '\t')) {
            assert!(!terminal_safe(&c.to_string()).contains(c), "{c:?}");
        }
    }

    #[test]
    fn panic_lines_are_one_short_line() {
        let huge: Box<dyn std::any::Any + Send> = Box::new(format!("{}\nsecond line", "x".repeat(500_000)));
        let line = panic_line(&*huge);
        assert!(line.starts_with(&"x".repeat(200)) && line.ends_with("… (500012 bytes)"), "{line}");
        assert_eq!(panic_line(&*(Box::new("short") as Box<dyn std::any::Any + Send>)), "short");
        assert_eq!(panic_line(&*(Box::new(7u8) as Box<dyn std::any::Any + Send>)), "(no message)");
    }
}
