//! Text written into the declarations: double-quoted string literals, and
//! block and JSDoc comments that cannot be closed early, all escaped and
//! bounded.

/// Descriptions are cut to this many bytes in comments.
const MAX_DOC_BYTES: usize = 8 << 10;

/// A double-quoted TypeScript string literal.
pub(super) fn push_string_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` cut to at most `max` bytes (on a character boundary), marked with `…`.
pub(super) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Text safe inside a block comment on one line: no `*/`, no line breaks,
/// no control characters.
pub(super) fn push_comment_text(out: &mut String, s: &str) {
    let mut prev_star = out.ends_with('*');
    for c in s.chars() {
        let c = if c.is_control() || c == '\u{2028}' || c == '\u{2029}' { ' ' } else { c };
        if c == '/' && prev_star {
            out.push('\\');
        }
        out.push(c);
        prev_star = c == '*';
    }
    if prev_star {
        out.push(' ');
    }
}

/// A JSDoc comment, one ` * ` line per line of `text`; nothing for empty text.
pub(super) fn push_doc(out: &mut String, text: &str, pad: &str) {
    let text = cut(text.trim(), MAX_DOC_BYTES);
    if text.is_empty() {
        return;
    }
    let lines: Vec<&str> = text.split(['\n', '\r', '\u{2028}', '\u{2029}']).collect();
    if lines.len() == 1 {
        out.push_str(pad);
        out.push_str("/** ");
        push_comment_text(out, lines[0]);
        out.push_str(" */\n");
        return;
    }
    out.push_str(pad);
    out.push_str("/**\n");
    for line in lines {
        out.push_str(pad);
        out.push_str(" * ");
        push_comment_text(out, line.trim_end());
        out.push('\n');
    }
    out.push_str(pad);
    out.push_str(" */\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_cannot_be_closed_early() {
        let mut out = String::new();
        push_doc(&mut out, "a */ b **/ c\u{2028}d\r\ne*", "");
        assert_eq!(out, "/**\n * a *\\/ b **\\/ c\n * d\n * \n * e* \n */\n");
        let mut out = String::new();
        push_doc(&mut out, "  ", "");
        assert_eq!(out, "");
        let long = "y".repeat(MAX_DOC_BYTES * 2);
        let mut out = String::new();
        push_doc(&mut out, &long, "");
        assert!(out.len() < MAX_DOC_BYTES + 32 && out.contains('…'));
    }
}
