//! Bearer tokens of `wrepl serve --http`: generated (32 random bytes,
//! base64url), read from a token file (created 0600 when missing, one token
//! a line) or taken from `WREPL_TOKEN`. Only the tokens' SHA-256 digests are
//! kept; a presented token is hashed and compared with every digest in
//! constant time. A digest is also the token's [`Fingerprint`]: the owner
//! recorded with the sessions the token creates.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// Random bytes in a generated token.
pub const TOKEN_BYTES: usize = 32;
/// Shortest token accepted from a file or `WREPL_TOKEN`, in characters.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Longest token accepted, in characters.
pub const MAX_TOKEN_CHARS: usize = 4096;
/// Most tokens one token file may hold.
pub const MAX_TOKENS: usize = 64;
/// Largest token file read, in bytes.
const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;

/// Errors obtaining the server's tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The system's random source failed.
    #[error("cannot generate an access token: the system random source failed: {0}")]
    Random(String),
    /// The token file could not be created, read or written.
    #[error("token file {}: {source}", path.display())]
    Io {
        /// The token file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The token file is unsafe to trust (not a regular file, or readable
    /// by others).
    #[error("token file {}: {reason}", path.display())]
    UnsafeFile {
        /// The token file.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A token is malformed (too short, too long, or not visible ASCII).
    #[error("{origin}: {reason}")]
    BadToken {
        /// Where the token came from (`WREPL_TOKEN`, `FILE line N`).
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The token file holds no token (only comments), or too many.
    #[error("token file {}: {reason}", path.display())]
    BadFile {
        /// The token file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The SHA-256 digest of a token: who created a session, recorded with it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of `token`.
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// The digest's bytes.
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex of the first 8 bytes (for messages; not a secret, and
    /// not enough to find the token).
    pub fn short(&self) -> String {
        self.0[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({})", self.short())
    }
}

/// The tokens a server accepts, kept as digests only.
#[derive(Clone)]
pub struct TokenSet {
    digests: Vec<Fingerprint>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet").field("tokens", &self.digests.len()).finish()
    }
}

/// Where a server's tokens came from, for its startup message.
#[derive(Debug)]
pub enum TokenSource {
    /// Generated at start; this is the one place the token text exists.
    Generated(String),
    /// A new token was written to this (new or empty) file.
    CreatedFile(PathBuf),
    /// Read from this existing file (how many tokens).
    File(PathBuf, usize),
    /// Taken from the `WREPL_TOKEN` environment variable.
    Env,
}

/// The tokens of a token file's text, each with its 0-based line number:
/// one a line, trimmed; empty lines and lines starting with `#` are skipped.
pub fn token_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().map(str::trim).enumerate().filter(|(_, t)| !t.is_empty() && !t.starts_with('#'))
}

impl TokenSet {
    /// A set of the given tokens; each must be [`MIN_TOKEN_CHARS`] to
    /// [`MAX_TOKEN_CHARS`] visible ASCII characters (no spaces). `origin`
    /// names where they came from, for errors.
    pub fn from_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<Self, AuthError> {
        let mut digests = Vec::new();
        for (i, t) in tokens.into_iter().enumerate() {
            check_token(t).map_err(|reason| AuthError::BadToken { origin: format!("{origin} #{}", i + 1), reason })?;
            digests.push(Fingerprint::of(t));
        }
        if digests.is_empty() {
            return Err(AuthError::BadToken { origin: origin.into(), reason: "no token given".into() });
        }
        Ok(Self { digests })
    }

    /// A freshly generated token ([`TOKEN_BYTES`] random bytes, base64url)
    /// and the set holding it.
    pub fn generate() -> Result<(Self, String), AuthError> {
        let token = generate_token()?;
        Ok((Self { digests: vec![Fingerprint::of(&token)] }, token))
    }

    /// The set from `WREPL_TOKEN`'s value (one token).
    pub fn from_env_value(value: &str) -> Result<Self, AuthError> {
        Self::from_tokens([value.trim()], "WREPL_TOKEN")
    }

    /// The tokens of `path`: when the file exists and holds tokens, those
    /// (one a line; empty lines and lines starting with `#` are skipped).
    /// When it is missing it is created (exclusively, mode 0600) holding a
    /// new token; an existing empty file gets a new token too. An existing
    /// file must be a regular file (not a symlink) that neither group nor
    /// others can read or write.
    pub fn load_or_create_file(path: &Path) -> Result<(Self, TokenSource), AuthError> {
        let io = |source| AuthError::Io { path: path.to_path_buf(), source };
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
            Ok(mut f) => {
                let token = generate_token()?;
                write_token(&mut f, &token).map_err(|e| {
                    // Leave no half-written file behind to be read as a token later.
                    let _ = std::fs::remove_file(path);
                    io(e)
                })?;
                return Ok((Self { digests: vec![Fingerprint::of(&token)] }, TokenSource::CreatedFile(path.into())));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        let open = |write: bool| {
            std::fs::OpenOptions::new().read(!write).write(write).custom_flags(libc::O_NOFOLLOW).open(path).map_err(
                |e| match e.raw_os_error() {
                    Some(libc::ELOOP) => AuthError::UnsafeFile {
                        path: path.into(),
                        reason: "is a symbolic link; give the real file".into(),
                    },
                    _ => io(e),
                },
            )
        };
        let mut f = open(false)?;
        let meta = f.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(AuthError::UnsafeFile { path: path.into(), reason: "is not a regular file".into() });
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(AuthError::UnsafeFile {
                path: path.into(),
                reason: format!("group or others may access it (mode {mode:04o}); run `chmod 600` on it"),
            });
        }
        if meta.len() > MAX_TOKEN_FILE_BYTES {
            return Err(AuthError::BadFile {
                path: path.into(),
                reason: format!("is {} bytes, too large", meta.len()),
            });
        }
        let mut text = String::new();
        (&mut f).take(MAX_TOKEN_FILE_BYTES).read_to_string(&mut text).map_err(io)?;
        if text.trim().is_empty() {
            let token = generate_token()?;
            let mut w = open(true)?;
            w.set_len(0).map_err(io)?;
            write_token(&mut w, &token).map_err(io)?;
            return Ok((Self { digests: vec![Fingerprint::of(&token)] }, TokenSource::CreatedFile(path.into())));
        }
        let mut digests = Vec::new();
        for (n, t) in token_lines(&text) {
            check_token(t).map_err(|reason| AuthError::BadToken {
                origin: format!("token file {} line {}", path.display(), n + 1),
                reason,
            })?;
            digests.push(Fingerprint::of(t));
        }
        if digests.is_empty() {
            return Err(AuthError::BadFile { path: path.into(), reason: "holds no token, only comments".into() });
        }
        if digests.len() > MAX_TOKENS {
            return Err(AuthError::BadFile {
                path: path.into(),
                reason: format!("holds {} tokens; at most {MAX_TOKENS} are accepted", digests.len()),
            });
        }
        let n = digests.len();
        Ok((Self { digests }, TokenSource::File(path.into(), n)))
    }

    /// How many tokens the set holds.
    pub fn len(&self) -> usize {
        self.digests.len()
    }

    /// True when the set holds no token (never, for a constructed set).
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The fingerprint of `presented` when it is one of the set's tokens.
    /// The presented token is hashed, then compared with every digest in
    /// constant time (all of them, whatever matches).
    pub fn verify(&self, presented: &str) -> Option<Fingerprint> {
        let given = Fingerprint::of(presented);
        let mut found = subtle::Choice::from(0u8);
        for d in &self.digests {
            found |= d.0[..].ct_eq(&given.0[..]);
        }
        bool::from(found).then_some(given)
    }
}

fn write_token(f: &mut std::fs::File, token: &str) -> std::io::Result<()> {
    f.write_all(format!("{token}\n").as_bytes())?;
    f.sync_all()
}

fn generate_token() -> Result<String, AuthError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn check_token(t: &str) -> Result<(), String> {
    let n = t.chars().count();
    if n < MIN_TOKEN_CHARS {
        return Err(format!("the token is {n} characters; use at least {MIN_TOKEN_CHARS} (a generated one has 43)"));
    }
    if n > MAX_TOKEN_CHARS {
        return Err(format!("the token is {n} characters; at most {MAX_TOKEN_CHARS} are accepted"));
    }
    if let Some(c) = t.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!("the token holds {c:?}; use visible ASCII characters only (no spaces)"));
    }
    Ok(())
}

/// What an `Authorization` header presented.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Presented<'a> {
    /// No header.
    Nothing,
    /// `Bearer <token>`.
    Bearer(&'a str),
    /// Something else (another scheme, several headers, bad bytes).
    Malformed,
}

/// Reads the bearer token of a request's `Authorization` header(s).
pub(crate) fn presented(headers: &axum::http::HeaderMap) -> Presented<'_> {
    let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Presented::Nothing };
    if values.next().is_some() {
        return Presented::Malformed;
    }
    let Ok(value) = value.to_str() else { return Presented::Malformed };
    let Some((scheme, token)) = value.trim().split_once(' ') else { return Presented::Malformed };
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(char::is_whitespace) {
        return Presented::Malformed;
    }
    Presented::Bearer(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_random_base64url_and_verify() {
        let (set, a) = TokenSet::generate().unwrap();
        let (_, b) = TokenSet::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{a}");
        assert_eq!(set.verify(&a), Some(Fingerprint::of(&a)));
        assert_eq!(set.verify(&b), None);
        assert_eq!(set.verify(&a[..42]), None);
        assert_eq!(set.verify(""), None);
    }

    #[test]
    fn several_tokens_each_verify_to_their_own_fingerprint() {
        let set = TokenSet::from_tokens(["alpha-token-000000", "bravo-token-000000"], "test").unwrap();
        assert_eq!(set.len(), 2);
        let a = set.verify("alpha-token-000000").unwrap();
        let b = set.verify("bravo-token-000000").unwrap();
        assert_ne!(a, b);
        assert_eq!(set.verify("charlie-token-0000"), None);
    }

    #[test]
    fn weak_or_odd_tokens_are_refused() {
        assert!(TokenSet::from_env_value("short").is_err());
        assert!(TokenSet::from_env_value("has a space in it 123").is_err());
        assert!(TokenSet::from_env_value("tab\there-0123456789").is_err());
        assert!(TokenSet::from_env_value("nön-ascii-0123456789").is_err());
        assert!(TokenSet::from_tokens([], "x").is_err());
        assert!(TokenSet::from_env_value("  padded-token-0123456789\n").is_ok());
    }

    #[test]
    fn token_file_is_created_0600_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let (set, source) = TokenSet::load_or_create_file(&path).unwrap();
        assert!(matches!(source, TokenSource::CreatedFile(_)), "{source:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(set.verify(text.trim()).is_some());
        let (again, source) = TokenSet::load_or_create_file(&path).unwrap();
        assert!(matches!(source, TokenSource::File(_, 1)), "{source:?}");
        assert!(again.verify(text.trim()).is_some());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "an existing token file is not rewritten");
    }

    #[test]
    fn token_file_lists_several_tokens_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "# alice\nalice-token-0123456789\n\n  # bob\nbob-token-0123456789  \n").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let (set, source) = TokenSet::load_or_create_file(&path).unwrap();
        assert!(matches!(source, TokenSource::File(_, 2)), "{source:?}");
        assert!(set.verify("alice-token-0123456789").is_some());
        assert!(set.verify("bob-token-0123456789").is_some());
        assert!(set.verify("# alice").is_none());
    }

    #[test]
    fn unsafe_token_files_are_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::write(&open, "readable-token-0123456789\n").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = TokenSet::load_or_create_file(&open).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        let e = TokenSet::load_or_create_file(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let comments = dir.path().join("comments");
        std::fs::write(&comments, "# nothing here\n").unwrap();
        std::fs::set_permissions(&comments, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(TokenSet::load_or_create_file(&comments).unwrap_err().to_string().contains("no token"));
        let weak = dir.path().join("weak");
        std::fs::write(&weak, "abc\n").unwrap();
        std::fs::set_permissions(&weak, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(TokenSet::load_or_create_file(&weak).unwrap_err().to_string().contains("line 1"));
    }

    #[test]
    fn empty_token_file_gets_a_token() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (set, source) = TokenSet::load_or_create_file(&path).unwrap();
        assert!(matches!(source, TokenSource::CreatedFile(_)), "{source:?}");
        assert!(set.verify(std::fs::read_to_string(&path).unwrap().trim()).is_some());
    }

    #[test]
    fn authorization_header_parsing() {
        use axum::http::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        assert_eq!(presented(&h), Presented::Nothing);
        h.insert("authorization", HeaderValue::from_static("Bearer abc"));
        assert_eq!(presented(&h), Presented::Bearer("abc"));
        h.insert("authorization", HeaderValue::from_static("bearer   abc  "));
        assert_eq!(presented(&h), Presented::Bearer("abc"));
        h.insert("authorization", HeaderValue::from_static("Basic abc"));
        assert_eq!(presented(&h), Presented::Malformed);
        h.insert("authorization", HeaderValue::from_static("Bearer"));
        assert_eq!(presented(&h), Presented::Malformed);
        h.insert("authorization", HeaderValue::from_static("Bearer a b"));
        assert_eq!(presented(&h), Presented::Malformed);
        h.insert("authorization", HeaderValue::from_static("Bearer abc"));
        h.append("authorization", HeaderValue::from_static("Bearer def"));
        assert_eq!(presented(&h), Presented::Malformed);
    }
}
