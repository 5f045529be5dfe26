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

/// The real clock and a cryptographically secure generator (rand's
/// thread-local ChaCha, seeded from the OS).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemAmbient;

impl Ambient for SystemAmbient {
    fn now_us(&self) -> f64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as f64).unwrap_or(0.0)
    }
    fn random_u64(&self) -> u64 {
        // The thread's ChaCha generator, seeded (and reseeded) from the OS:
        // the guest's crypto.getRandomValues keys its stream with these draws.
        rand::Rng::next_u64(&mut rand::rng())
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
