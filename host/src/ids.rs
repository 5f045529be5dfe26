//! The one id generator: tool-use ids (`toolu_…`) and generated session
//! names, from a per-process OS-random key mixed with a counter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The per-process key (64 bits) and tag (32 bits), drawn from the OS once.
fn key() -> (u64, u32) {
    static KEY: OnceLock<(u64, u32)> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut b = [0u8; 12];
        if getrandom::fill(&mut b).is_err() {
            // Unique, if not unpredictable: the time and the process id.
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            b[..8].copy_from_slice(&(t.as_nanos() as u64).to_le_bytes());
            b[8..].copy_from_slice(&std::process::id().to_le_bytes());
        }
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[..8]);
        let mut t = [0u8; 4];
        t.copy_from_slice(&b[8..]);
        (u64::from_le_bytes(k), u32::from_le_bytes(t))
    })
}

/// The next 96 bits of the sequence: splitmix64 of key + n (a bijection of
/// n, so values never repeat within the process) and a 32-bit tag.
fn next() -> (u64, u32) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (key, tag) = key();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut z = key.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z, tag ^ (n >> 32) as u32)
}

/// A fresh `toolu_…` id (24 hex digits), unique within the process and
/// unpredictable across processes, without a system call per id.
pub(crate) fn tool_use_id() -> String {
    let (z, t) = next();
    let mut id = String::with_capacity(30);
    id.push_str("toolu_");
    push_hex(&mut id, z, 16);
    push_hex(&mut id, u64::from(t), 8);
    id
}

/// A fresh name suffix of 16 hex digits (e.g. generated session names).
pub(crate) fn short_id() -> String {
    let (z, _) = next();
    let mut id = String::with_capacity(16);
    push_hex(&mut id, z, 16);
    id
}

/// Append the low `digits` hex digits of `v`, zero-padded (as `{v:0digits$x}`
/// would, without the formatting machinery: one id per inner call).
fn push_hex(out: &mut String, v: u64, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        out.push(char::from(HEX[((v >> (4 * i)) & 0xf) as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_use_ids_are_unique_and_well_formed() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| tool_use_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(100) {
            let hex = id.strip_prefix("toolu_").expect("prefix");
            assert_eq!(hex.len(), 24, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        let names: std::collections::HashSet<String> = (0..1000).map(|_| short_id()).collect();
        assert_eq!(names.len(), 1000);
        assert!(names.iter().all(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[test]
    fn hex_digits_match_the_formatter() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut s = String::new();
            push_hex(&mut s, v, 16);
            assert_eq!(s, format!("{v:016x}"));
            let mut s = String::new();
            push_hex(&mut s, v & 0xffff_ffff, 8);
            assert_eq!(s, format!("{:08x}", v & 0xffff_ffff));
        }
    }
}
