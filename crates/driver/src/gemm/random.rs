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
    uniform_into(seed, first, &mut out);
    out
}

/// The values of [`uniform`]`(seed, first, len)` handed to `sink` `piece` values at a time
/// (the last piece shorter), each with the index of its first value, drawn into one buffer:
/// a large tensor's values go where they are stored without all of them being held at once.
/// Stops at the first error of `sink`.
pub(super) fn uniform_pieces<E>(
    seed: u64,
    first: u64,
    len: usize,
    piece: usize,
    mut sink: impl FnMut(usize, &[f32]) -> Result<(), E>,
) -> Result<(), E> {
    let piece = piece.max(1);
    let mut buf = vec![0f32; piece.min(len)];
    let mut at = 0;
    while at < len {
        let part = &mut buf[..piece.min(len - at)];
        uniform_into(seed, first + at as u64, part);
        sink(at, part)?;
        at += part.len();
    }
    Ok(())
}

/// Fill `out` with the uniform values from word `first` of the stream of `seed`.
fn uniform_into(seed: u64, first: u64, out: &mut [f32]) {
    let len = out.len();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8).min(len / PER_THREAD).max(1);
    let chunk = len.div_ceil(threads).max(1);
    let fill = |at: usize, part: &mut [f32]| {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        rng.set_word_pos(u128::from(first) + at as u128);
        part.iter_mut().for_each(|v| *v = rng.gen_range(-1.0f32..1.0));
    };
    if threads == 1 {
        fill(0, out);
        return;
    }
    let started = std::thread::scope(|s| {
        out.chunks_mut(chunk).enumerate().all(|(i, part)| {
            let fill = &fill;
            std::thread::Builder::new().spawn_scoped(s, move || fill(i * chunk, part)).is_ok()
        })
    });
    if !started {
        // A thread could not be started: draw everything here.
        fill(0, out);
    }
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

    /// Pieces of any size, put together, are the values drawn at once.
    #[test]
    fn pieces_are_the_values_drawn_at_once() {
        let (first, len) = (1000u64, PER_THREAD * 2 + 77);
        let want = uniform(9, first, len);
        for piece in [7, 1000, PER_THREAD, PER_THREAD * 2 + 1, len, len + 5] {
            let mut got = Vec::new();
            let mut starts = Vec::new();
            uniform_pieces(9, first, len, piece, |at, values| {
                starts.push(at);
                got.extend_from_slice(values);
                Ok::<(), ()>(())
            })
            .unwrap();
            assert!(got == want, "piece {piece}");
            assert_eq!(starts.len(), len.div_ceil(piece), "piece {piece}");
            assert!(starts.iter().enumerate().all(|(i, &at)| at == i * piece), "piece {piece}");
        }
        let mut calls = 0;
        let stopped = uniform_pieces(9, first, len, 1000, |_, _| {
            calls += 1;
            if calls == 3 {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!((stopped, calls), (Err("stop"), 3));
    }
}
