//! The one shell-command splitter: a command line into subcommands (marked
//! "not matchable" where substitution, output redirection, control
//! characters or an unterminated quote make its meaning unsure) and a
//! subcommand into words. Permission rules match its parts; Bash's
//! concurrency classification uses the same parts. It is syntax only: what
//! a part may do is the caller's decision.

/// One subcommand of a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    /// The text, trimmed.
    pub(crate) text: String,
    /// False when allow/ask rules must not match it (substitution, output
    /// redirection, control characters, unterminated quote).
    pub(crate) safe: bool,
}

/// Split a shell command line into subcommands (see the parent module's
/// docs).
pub(crate) fn split_shell(cmd: &str) -> Vec<Part> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let chars: Vec<char> = cmd.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut safe = true;
    let mut quote = Quote::None;
    let mut i = 0;
    let flush = |cur: &mut String, safe: &mut bool, parts: &mut Vec<Part>| {
        let text = cur.trim();
        if !text.is_empty() {
            parts.push(Part { text: text.to_string(), safe: *safe });
        }
        cur.clear();
        *safe = true;
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_control() && !matches!(c, '\t' | '\n') {
            safe = false;
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
                cur.push(c);
                i += 1;
            }
            Quote::Double => {
                cur.push(c);
                match c {
                    '\\' => {
                        if let Some(n) = next {
                            cur.push(n);
                            i += 1;
                        }
                    }
                    '"' => quote = Quote::None,
                    '`' => safe = false,
                    '$' if next == Some('(') => safe = false,
                    _ => {}
                }
                i += 1;
            }
            Quote::None => match c {
                '\\' => {
                    cur.push(c);
                    if let Some(n) = next {
                        cur.push(n);
                        i += 1;
                    }
                    i += 1;
                }
                '\'' => {
                    quote = Quote::Single;
                    cur.push(c);
                    i += 1;
                }
                '"' => {
                    quote = Quote::Double;
                    cur.push(c);
                    i += 1;
                }
                '`' => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '$' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' | '>' if next == Some('(') => {
                    safe = false;
                    cur.push(c);
                    i += 1;
                }
                '<' if next == Some('&') => {
                    cur.push_str("<&");
                    i += 2;
                }
                '<' if next == Some('>') => {
                    cur.push('<');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                '>' => i = redirect(&chars, i, &mut cur, &mut safe),
                '&' if next == Some('>') => {
                    cur.push('&');
                    i += 1;
                    i = redirect(&chars, i, &mut cur, &mut safe);
                }
                ';' | '\n' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += 1;
                }
                '|' | '&' => {
                    flush(&mut cur, &mut safe, &mut parts);
                    i += if matches!(next, Some('|' | '&')) { 2 } else { 1 };
                }
                _ => {
                    cur.push(c);
                    i += 1;
                }
            },
        }
    }
    if quote != Quote::None {
        safe = false;
    }
    flush(&mut cur, &mut safe, &mut parts);
    parts
}

/// Consume an output redirection starting at `chars[i] == '>'`; mark the
/// subcommand unsafe unless it targets a descriptor or `/dev/null`.
/// Returns the index after the redirection.
fn redirect(chars: &[char], mut i: usize, cur: &mut String, safe: &mut bool) -> usize {
    // `>`, `>>`, `>|`
    cur.push('>');
    i += 1;
    if let Some(&c @ ('>' | '|')) = chars.get(i) {
        cur.push(c);
        i += 1;
    }
    // `>&2`, `>&-`: descriptor duplication.
    if chars.get(i) == Some(&'&') {
        cur.push('&');
        i += 1;
        let start = i;
        while let Some(&c) = chars.get(i).filter(|c| c.is_ascii_digit() || **c == '-') {
            cur.push(c);
            i += 1;
        }
        let ends = chars.get(i).is_none_or(|c| c.is_whitespace() || ";|&<>)".contains(*c));
        if i > start && ends {
            return i;
        }
    }
    while let Some(&c) = chars.get(i).filter(|c| **c == ' ' || **c == '\t') {
        cur.push(c);
        i += 1;
    }
    let mut target = String::new();
    while let Some(&c) = chars.get(i).filter(|c| !c.is_whitespace() && !";|&<>()".contains(**c)) {
        target.push(c);
        i += 1;
    }
    cur.push_str(&target);
    if target != "/dev/null" {
        *safe = false;
    }
    i
}

/// Words of a shell command with quotes and escapes removed (a rough
/// approximation for deny matching; no expansion).
pub(crate) fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            cur.extend(chars.next());
                        }
                        c => cur.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => {
                    in_word = true;
                    cur.push(n);
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}
