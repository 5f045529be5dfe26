//! Text caps and truncation, shared by the layers: every cut lands on a
//! char boundary, and a capped text says how much was cut.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_land_on_char_boundaries() {
        assert_eq!(prefix("héllo", 2), "h");
        assert_eq!(prefix("héllo", 3), "hé");
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(cap_text("abc".into(), 5), "abc");
        let t = cap_text("é".repeat(10), 4);
        assert!(t.starts_with("éééé\n…[truncated: showing 4 of 10 characters]"));
    }
}
