//! Clock and randomness (the `now-us` and `random-u64` imports): the
//! [`Ambient`] source, and the import side, which asks the evaluation's tape.

use super::HostState;

/// Clock and randomness for the guest (replaceable for deterministic replay).
pub trait Ambient: Send + Sync + 'static {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> f64;
    /// 64 random bits.
    fn random_u64(&self) -> u64;
}

/// The real clock and an OS-seeded generator.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemAmbient;

thread_local! {
    static RNG: std::cell::Cell<u64> = std::cell::Cell::new({
        let mut b = [0u8; 8];
        // An unseeded generator would make every context's Math.random()
        // identical; fall back to the clock only if the OS refuses.
        if getrandom::fill(&mut b).is_err() {
            b = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64).to_le_bytes();
        }
        u64::from_le_bytes(b) | 1
    });
}

impl Ambient for SystemAmbient {
    fn now_us(&self) -> f64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as f64).unwrap_or(0.0)
    }
    fn random_u64(&self) -> u64 {
        // splitmix64 over a per-thread OS-seeded state
        RNG.with(|s| {
            let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
            s.set(x);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
    }
}

impl HostState {
    /// `now-us`: the tape answers (recorded, replayed, or live).
    pub(super) fn read_clock(&mut self) -> f64 {
        self.taped(|tape, host| tape.now(host))
    }

    /// `random-u64`: the tape answers (recorded, replayed, or live).
    pub(super) fn draw_random(&mut self) -> u64 {
        self.taped(|tape, host| tape.random(host))
    }
}
