//! The seeded random inputs of `ntile gemm`, generated on every core.
//!
//! The values are those of one `StdRng::seed_from_u64(seed)` stream drawn in order (A's
//! elements, then B's), `gen_range(-1.0..1.0)` each. That draw takes exactly one 32-bit word
//! of the ChaCha12 stream per value, so each thread seeks its own copy of the stream to its
//! first word (`set_word_pos`) and the result does not depend on the number of threads.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// Work started on another thread (the random inputs, drawn while the kernel is planned).
pub(super) struct Background<T>(Option<std::thread::JoinHandle<T>>);

impl<T: Send + 'static> Background<T> {
    /// Start `work` on a new thread; if none can be started, [`finish`](Self::finish)
    /// returns `None`.
    pub fn start(work: impl FnOnce() -> T + Send + 'static) -> Self {
        Background(std::thread::Builder::new().name("ntile-inputs".into()).spawn(work).ok())
    }

    /// The result, or `None` when the thread could not be started or failed.
    pub fn finish(mut self) -> Option<T> {
        self.0.take()?.join().ok()
    }
}

impl<T> Drop for Background<T> {
    /// A run that ends early (a planning error, an interruption) waits for the thread rather
    /// than leave it drawing after the call has returned.
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            let _ = handle.join();
        }
    }
}

/// Values per thread below which one thread draws them all.
const PER_THREAD: usize = 1 << 18;

/// `len` uniform values in [-1, 1) from word `first` of the stream of `seed`.
pub(super) fn uniform(seed: u64, first: u64, len: usize) -> Vec<f32> {
    let mut out = vec![0f32; len];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8).min(len / PER_THREAD).max(1);
    let chunk = len.div_ceil(threads).max(1);
    let fill = |at: usize, part: &mut [f32]| {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        rng.set_word_pos(u128::from(first) + at as u128);
        part.iter_mut().for_each(|v| *v = rng.gen_range(-1.0f32..1.0));
    };
    if threads == 1 {
        fill(0, &mut out);
        return out;
    }
    let started = std::thread::scope(|s| {
        out.chunks_mut(chunk).enumerate().all(|(i, part)| {
            let fill = &fill;
            std::thread::Builder::new().spawn_scoped(s, move || fill(i * chunk, part)).is_ok()
        })
    });
    if !started {
        // A thread could not be started: draw everything here.
        fill(0, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_values_as_one_std_rng_stream_in_order() {
        for seed in [0u64, 7, 0xDEAD_BEEF] {
            let (a_len, b_len) = (PER_THREAD * 2 + 13, PER_THREAD * 3 + 5);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let want: Vec<f32> = (0..a_len + b_len).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
            let a = uniform(seed, 0, a_len);
            let b = uniform(seed, a_len as u64, b_len);
            assert!(a == want[..a_len], "seed {seed}: A differs");
            assert!(b == want[a_len..], "seed {seed}: B differs");
        }
    }
}
