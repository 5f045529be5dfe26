//! The compile cache.
//!
//! A cached artifact is native code wasmtime runs without further checks, so
//! it is only loaded when it is provably ours: the file is read into memory
//! (never mapped: a concurrent truncation cannot fault the host), and its
//! HMAC-SHA256 tag, under a 32-byte random key kept in a 0600 file of the
//! 0700 cache directory, must match the payload and the cache name (which
//! carries the guest's hash and the engine's compatibility hash, so a valid
//! artifact of another configuration or guest does not verify under this
//! name). Anything else (a missing or short file, a bad header, a wrong tag,
//! an artifact wasmtime rejects) means: compile, and atomically replace the
//! file. A key file that is not a regular 0600 file of ours means: compile,
//! and cache nothing.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::{boxed, RuntimeError};

/// The cache file's name for `component` under `engine`: the guest's hash
/// and the engine's compatibility hash, so an artifact of another guest or
/// configuration is never looked up under it.
pub(super) fn cache_key(engine: &Engine, component: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    component.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("guest-{}-{:016x}.cwasm", env!("CARGO_PKG_VERSION"), h.finish())
}

/// Format tag at the start of a cache file.
pub(super) const CACHE_MAGIC: &[u8; 8] = b"WREPLCW1";
/// Length of the HMAC-SHA256 tag after the magic.
pub(super) const TAG_LEN: usize = 32;
/// Largest cache file read back (the guest's artifact is a few MiB).
pub(super) const MAX_CACHE_BYTES: u64 = 256 << 20;
/// The MAC key's file in the cache directory.
pub(super) const KEY_FILE: &str = "cache.key";
/// Length of the MAC key.
pub(super) const KEY_LEN: usize = 32;
/// Domain separation of the tag.
pub(super) const TAG_DOMAIN: &[u8] = b"wrepl compile cache v1\0";

/// What the compile cache did while loading the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CacheOutcome {
    /// No cache directory: compiled.
    Disabled,
    /// The cache (its directory or key) is not trusted: compiled, nothing stored.
    Untrusted(String),
    /// A verified artifact was loaded.
    Hit,
    /// Nothing usable was cached (the reason): compiled and stored.
    Stored(String),
    /// Compiled; storing failed (the reason).
    NotStored(String),
}

pub(super) fn load_component(
    engine: &Engine,
    bytes: &[u8],
    cache: Option<&PathBuf>,
) -> Result<Component, RuntimeError> {
    load_component_traced(engine, bytes, cache.map(PathBuf::as_path)).map(|(c, _)| c)
}

/// Load the guest through the compile cache, saying what the cache did.
pub(crate) fn load_component_traced(
    engine: &Engine,
    bytes: &[u8],
    cache: Option<&Path>,
) -> Result<(Component, CacheOutcome), RuntimeError> {
    let compile = || Component::new(engine, bytes).map_err(|e| RuntimeError::Component(boxed(e)));
    let Some(dir) = cache else {
        return Ok((compile()?, CacheOutcome::Disabled));
    };
    let key = match prepare_cache_dir(dir).and_then(|()| cache_mac_key(dir)) {
        Ok(k) => k,
        Err(why) => return Ok((compile()?, CacheOutcome::Untrusted(why))),
    };
    let name = cache_key(engine, bytes);
    let path = dir.join(&name);
    let miss = match read_verified(&path, &name, &key) {
        Ok(payload) => match deserialize_verified(engine, &payload) {
            Ok(c) => return Ok((c, CacheOutcome::Hit)),
            Err(e) => format!("wasmtime rejected the verified artifact: {e}"),
        },
        Err(why) => why,
    };
    let component = compile()?;
    let outcome = match component.serialize() {
        Ok(ser) => match store_artifact(dir, &path, &name, &key, &ser) {
            Ok(()) => CacheOutcome::Stored(miss),
            Err(e) => CacheOutcome::NotStored(e),
        },
        Err(e) => CacheOutcome::NotStored(format!("serialize: {e}")),
    };
    Ok((component, outcome))
}

#[allow(unsafe_code)] // Component::deserialize: see the SAFETY note
pub(super) fn deserialize_verified(engine: &Engine, payload: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `payload` is in this process's memory (read from the file, not
    // mapped, so it cannot change or vanish underneath wasmtime, which copies
    // it), and its HMAC-SHA256 tag verified under a key only this user can
    // read (a 0600 file of ours in our 0700 cache directory), computed over
    // exactly these bytes and this cache name; only `store_artifact` computes
    // such tags, over the output of `Component::serialize` of an engine whose
    // configuration and guest the name encodes (its compatibility hash).
    // wasmtime additionally re-checks the artifact's header and version.
    unsafe { Component::deserialize(engine, payload) }
}

/// HMAC-SHA256 (RFC 2104) of the concatenated `parts`.
pub(super) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

pub(super) fn artifact_tag(key: &[u8; KEY_LEN], name: &str, payload: &[u8]) -> [u8; TAG_LEN] {
    hmac_sha256(key, &[TAG_DOMAIN, name.as_bytes(), b"\0", payload])
}

/// The effective user id (from `/proc/self/status`, which stays readable
/// when the process is not dumpable).
pub(super) fn effective_uid() -> Result<u32, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| format!("/proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no effective uid in /proc/self/status".to_string())
}

/// Create the cache directory (0700) if needed; it must be a directory of
/// ours that nobody else can write (wider permissions are narrowed to 0700).
pub(super) fn prepare_cache_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let shown = dir.display();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the cache directory {shown}: {e}"))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_dir() {
        return Err(format!("{shown} is not a directory"));
    }
    if meta.uid() != effective_uid()? {
        return Err(format!("{shown} belongs to another user"));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {shown} private: {e}"))?;
    }
    Ok(())
}

/// Open a file for reading without following a final symlink and without
/// blocking on a FIFO.
pub(super) fn open_nofollow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

/// The MAC key of the cache directory, created on first use.
pub(super) fn cache_mac_key(dir: &Path) -> Result<[u8; KEY_LEN], String> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Ok(Some(k)) => return Ok(k),
        Ok(None) => {}
        Err(why) => return Err(why),
    }
    create_key(dir, &path)?;
    read_key(&path)?.ok_or_else(|| format!("{} vanished after it was created", path.display()))
}

/// Read a trusted key file: `Ok(None)` when there is none; an error when
/// there is one that is not a regular 0600 file of ours of exactly 32 bytes.
pub(super) fn read_key(path: &Path) -> Result<Option<[u8; KEY_LEN]>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let mut file = match open_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("the cache key {shown} is not trusted: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("the cache key {shown} is not a regular file"));
    }
    if meta.mode() & 0o7777 != 0o600 {
        return Err(format!("the cache key {shown} has mode {:o}, not 600", meta.mode() & 0o7777));
    }
    if meta.uid() != effective_uid()? {
        return Err(format!("the cache key {shown} belongs to another user"));
    }
    let mut buf = Vec::with_capacity(KEY_LEN + 1);
    file.by_ref().take(KEY_LEN as u64 + 1).read_to_end(&mut buf).map_err(|e| format!("{shown}: {e}"))?;
    let key: [u8; KEY_LEN] =
        buf.as_slice().try_into().map_err(|_| format!("the cache key {shown} is not {KEY_LEN} bytes long"))?;
    Ok(Some(key))
}

/// A unique temporary name in `dir`.
pub(super) fn temp_name(dir: &Path, stem: &str) -> Result<PathBuf, String> {
    let mut r = [0u8; 8];
    getrandom::fill(&mut r).map_err(|e| format!("no randomness for a temporary file: {e}"))?;
    Ok(dir.join(format!(".{stem}.{}.{:016x}.tmp", std::process::id(), u64::from_le_bytes(r))))
}

/// Create a new file (O_EXCL, mode 0600, not following symlinks) holding `parts`.
pub(super) fn write_new_private(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // The umask may have narrowed the mode; never widened it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    for p in parts {
        f.write_all(p)?;
    }
    f.sync_all()
}

/// Create the key file: 32 random bytes written to a new private file, then
/// published under the key's name with `link` (which, like O_EXCL, fails if
/// the name exists: a key another process published first wins).
pub(super) fn create_key(dir: &Path, path: &Path) -> Result<(), String> {
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| format!("no randomness for the cache key: {e}"))?;
    let tmp = temp_name(dir, "key")?;
    let written = write_new_private(&tmp, &[&key]).map_err(|e| format!("cannot create {}: {e}", tmp.display()));
    let linked = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot create the cache key {}: {e}", path.display())),
    });
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// Read the cache file into memory (bounded) and return its payload if the
/// header and the tag verify; otherwise why not.
pub(super) fn read_verified(path: &Path, name: &str, key: &[u8; KEY_LEN]) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    use subtle::ConstantTimeEq;
    let mut file = match open_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("not cached yet".into()),
        Err(e) => return Err(format!("unreadable: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("unreadable: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_CACHE_BYTES {
        return Err(format!("{} bytes, over the {MAX_CACHE_BYTES}-byte bound", meta.len()));
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.by_ref().take(MAX_CACHE_BYTES + 1).read_to_end(&mut data).map_err(|e| format!("unreadable: {e}"))?;
    if data.len() as u64 > MAX_CACHE_BYTES {
        return Err("grew past the size bound while read".into());
    }
    let header = CACHE_MAGIC.len() + TAG_LEN;
    if data.len() <= header {
        return Err(format!("short file ({} bytes)", data.len()));
    }
    if &data[..CACHE_MAGIC.len()] != CACHE_MAGIC {
        return Err("bad header".into());
    }
    let (tag, payload) = data[CACHE_MAGIC.len()..].split_at(TAG_LEN);
    let expected = artifact_tag(key, name, payload);
    if !bool::from(expected.ct_eq(tag)) {
        return Err("the tag does not verify (modified, truncated or not made for this configuration)".into());
    }
    data.drain(..header);
    Ok(data)
}

/// Write a tagged artifact to a new private file and atomically rename it
/// over `path`.
pub(super) fn store_artifact(
    dir: &Path,
    path: &Path,
    name: &str,
    key: &[u8; KEY_LEN],
    ser: &[u8],
) -> Result<(), String> {
    let tag = artifact_tag(key, name, ser);
    let tmp = temp_name(dir, name)?;
    let res = write_new_private(&tmp, &[CACHE_MAGIC, &tag, ser])
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot store {}: {e}", path.display()));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}
