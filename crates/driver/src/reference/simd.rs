//! Wider vectors for the check's f64 loops, chosen at run time.
//!
//! The workspace builds for the baseline x86-64 instruction set, whose vectors hold two f64
//! values, while the check's sweeps are plain loops over f64 that the compiler vectorises.
//! [`wide!`] defines a function that runs a kernel (an `#[inline(always)]` function) compiled
//! for AVX2 and FMA when the processor has them (the kernel is inlined there, so its loops
//! use four-wide vectors), and as it is elsewhere. Rust never contracts a multiply and an add
//! into a fused multiply-add, so both versions compute the same values: the choice changes
//! only the speed.

/// Whether this processor runs AVX2 and FMA code.
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `wide!(fn name(args) -> T => kernel)`: a function `name` that calls the `#[inline(always)]`
/// function `kernel` with its arguments, compiled for AVX2 and FMA when the processor has them.
macro_rules! wide {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $kernel:path) => {
        $(#[$meta])*
        fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) -> $ret {
                    $kernel($($arg),*)
                }
                if $crate::reference::simd::has_avx2() {
                    #[expect(unsafe_code, reason = "calling a function compiled for AVX2 and FMA")]
                    // SAFETY: the processor supports AVX2 and FMA, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $kernel($($arg),*)
        }
    };
}
pub(super) use wide;
