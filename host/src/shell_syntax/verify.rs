//! The cross-checks of brush's reading against bash's: every word token is
//! one bash word, and at the top level every byte of the source is a token,
//! a blank, a line continuation or a comment (see the module docs).

use brush_parser::word::{WordPiece, WordPieceWithSource};
use brush_parser::Token;

use super::guarded;
use super::model::Construct;
use super::walk::Walker;

/// Character index → byte offset of `src`.
fn char_offsets(src: &str) -> Vec<usize> {
    let mut v: Vec<usize> = src.char_indices().map(|(i, _)| i).collect();
    v.push(src.len());
    v
}

/// A word token's text is one bash word: brush's word parser reads all of
/// it, and none of its unquoted text holds what would end a word in bash.
fn token_is_one_word(pieces: &[WordPieceWithSource]) -> bool {
    pieces.iter().all(|p| match &p.piece {
        WordPiece::Text(t) => !t.contains([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']),
        _ => true,
    })
}

impl Walker {
    /// Every word token is one bash word; at the top level, every byte of the
    /// source is a token, a blank, a line continuation or a comment.
    pub(super) fn check_tokens(&mut self, src: &str, tokens: &[Token]) {
        let offsets = char_offsets(src);
        let byte = |i: usize| offsets.get(i).copied();
        let mut prev_end = 0usize;
        let mut bytes_ok = self.here_docs.is_empty();
        for t in tokens {
            let span = t.location();
            let (start, end) = (span.start.index, span.end.index);
            if let Token::Word(w, _) = t {
                if !self.here_docs.contains(&(start, end)) {
                    match guarded(|| brush_parser::word::parse(w, &self.opts)) {
                        Ok(pieces) if token_is_one_word(&pieces) => {}
                        Ok(_) => self.opaque(Construct::Unverified(format!("bash may split the word `{w}`"))),
                        Err(e) => self.opaque(Construct::Unverified(format!("the word `{w}`: {e}"))),
                    }
                }
            }
            if !bytes_ok {
                continue;
            }
            let (Some(s), Some(e), Some(p)) = (byte(start), byte(end), byte(prev_end)) else {
                self.opaque(Construct::Unverified("a token outside the command".into()));
                bytes_ok = false;
                continue;
            };
            if s < p || e < s {
                self.structure(Construct::Unverified("tokens out of order".into()));
                bytes_ok = false;
                continue;
            }
            self.check_gap(&src[p..s]);
            let text = &src[s..e];
            if let (Token::Operator(op, _), Some(before)) = (t, text.strip_suffix('\n')) {
                // A newline token's span starts where a comment before it does.
                if op == "\n" && !before.is_empty() {
                    self.check_gap(before);
                    prev_end = end;
                    continue;
                }
            }
            if text != t.to_str() && text.replace("\\\n", "") != t.to_str() {
                self.structure(Construct::Unverified(format!("the token `{}`", t.to_str())));
            }
            prev_end = end;
        }
        if bytes_ok {
            match byte(prev_end) {
                Some(p) => self.check_gap(&src[p..]),
                None => self.structure(Construct::Unverified("the end of the command".into())),
            }
        }
    }

    /// Between tokens: blanks, line continuations, or a comment (to the
    /// newline, which is a token).
    fn check_gap(&mut self, gap: &str) {
        let mut rest = gap;
        while let Some(c) = rest.chars().next() {
            if c == ' ' || c == '\t' {
                rest = &rest[1..];
            } else if let Some(r) = rest.strip_prefix("\\\n") {
                rest = r;
            } else if c == '#' && !rest.contains('\n') {
                self.structure(Construct::Comment);
                return;
            } else {
                let shown: String = rest.chars().take(20).collect();
                self.structure(Construct::Unverified(format!("`{shown}` between words")));
                return;
            }
        }
    }
}
