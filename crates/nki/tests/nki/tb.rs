//! A small builder of traces (what the Python tracer would record), the views kernels use,
//! and the trace of the tiled matmul of the tutorial (shared by the tests and the bench).
#![allow(dead_code)]

use nki::trace::{
    Accumulate, Alu, Api, Buffer, EngineName, Imm, Loc, LoopKind, Record, TensorRecord, TracePerfMode, View,
};
use nki::{KernelBuilder, NkiKernel, Trace};
use penguin::{DType, Target};

/// Builds a trace record by record; every record and tensor is on the current line of
/// `kernel.py`.
pub struct Tb {
    pub trace: Trace,
    pub line: u32,
    pub next_site: u32,
}

impl Tb {
    pub fn new(kernel: &str, target: Target) -> Self {
        Tb {
            trace: Trace {
                format: nki::TRACE_FORMAT.into(),
                version: nki::TRACE_VERSION,
                kernel: kernel.into(),
                api: Api::Current,
                target,
                files: vec!["kernel.py".into()],
                tensors: Vec::new(),
                ops: Vec::new(),
                outputs: Vec::new(),
                constants: Vec::new(),
                cores: Vec::new(),
            },
            line: 1,
            next_site: 0,
        }
    }

    /// Records from now on are on `line`.
    pub fn at(&mut self, line: u32) -> &mut Self {
        self.line = line;
        self
    }

    pub fn loc(&self) -> Loc {
        Loc(0, self.line)
    }

    /// A tensor at a new site.
    pub fn tensor(&mut self, name: &str, buffer: Buffer, dtype: DType, shape: &[u64]) -> u32 {
        let site = self.next_site;
        self.next_site += 1;
        self.tensor_at_site(name, buffer, dtype, shape, site)
    }

    /// A tensor at a given site (instances of one allocation in a loop share it).
    pub fn tensor_at_site(&mut self, name: &str, buffer: Buffer, dtype: DType, shape: &[u64], site: u32) -> u32 {
        self.next_site = self.next_site.max(site + 1);
        self.trace.tensors.push(TensorRecord {
            name: name.into(),
            buffer,
            dtype,
            shape: shape.to_vec(),
            par: 0,
            site,
            loc: self.loc(),
            address: None,
        });
        self.trace.tensors.len() as u32 - 1
    }

    /// A fresh site id.
    pub fn site(&mut self) -> u32 {
        self.next_site += 1;
        self.next_site - 1
    }

    pub fn input(&mut self, name: &str, dtype: DType, shape: &[u64]) -> u32 {
        self.tensor(name, Buffer::Input, dtype, shape)
    }

    /// A shared_hbm tensor the kernel returns.
    pub fn output(&mut self, name: &str, dtype: DType, shape: &[u64]) -> u32 {
        let t = self.tensor(name, Buffer::SharedHbm, dtype, shape);
        self.trace.outputs.push(t);
        t
    }

    pub fn op(&mut self, r: Record) -> &mut Self {
        self.trace.ops.push(r);
        self
    }

    pub fn dma(&mut self, dst: View, src: View) -> &mut Self {
        let loc = self.loc();
        self.op(Record::DmaCopy { loc, dst, src })
    }

    pub fn matmul(&mut self, dst: View, stationary: View, moving: View, accumulate: Accumulate) -> &mut Self {
        let loc = self.loc();
        self.op(Record::Matmul {
            loc,
            dst,
            stationary,
            moving,
            accumulate,
            perf_mode: TracePerfMode::None,
            tile_position: None,
            tile_size: None,
        })
    }

    pub fn copy(&mut self, dst: View, src: View, engine: Option<EngineName>) -> &mut Self {
        let loc = self.loc();
        self.op(Record::TensorCopy { loc, dst, src, engine })
    }

    pub fn memset(&mut self, dst: View, value: f64) -> &mut Self {
        let loc = self.loc();
        self.op(Record::Memset { loc, dst, value: Imm(value), engine: None })
    }

    pub fn tensor_tensor(&mut self, dst: View, in0: View, in1: View, alu: Alu) -> &mut Self {
        let loc = self.loc();
        self.op(Record::TensorTensor { loc, dst, in0, in1, alu, engine: None })
    }

    pub fn loop_begin(&mut self, trips: u64) -> &mut Self {
        let loc = self.loc();
        self.op(Record::LoopBegin { loc, kind: LoopKind::Affine, trips })
    }

    pub fn iteration(&mut self, index: u64) -> &mut Self {
        let loc = self.loc();
        self.op(Record::Iteration { loc, index })
    }

    pub fn loop_end(&mut self) -> &mut Self {
        let loc = self.loc();
        self.op(Record::LoopEnd { loc })
    }

    pub fn finish(&self) -> Trace {
        self.trace.clone()
    }

    pub fn build(&self) -> Result<NkiKernel, nki::NkiError> {
        KernelBuilder::new(self.trace.target).build(&self.trace)
    }
}

/// The whole `[p, f]` tile of an on-chip tensor.
pub fn tile(t: u32, p: u64, f: u64) -> View {
    View { t, block: None, offset: 0, ap: vec![(f as i64, p), (1, f)] }
}

/// Columns `[c0, c0 + cols)` of every partition of a `[p, f]` tile.
pub fn cols(t: u32, p: u64, f: u64, c0: u64, cols: u64) -> View {
    View { t, block: None, offset: c0 as i64, ap: vec![(f as i64, p), (1, cols)] }
}

/// Rows `[r0, r0 + rows)` and columns `[c0, c0 + cols)` of a row-major HBM matrix with
/// `row_len` columns (row `i` of the window to partition `i`).
pub fn window(t: u32, row_len: u64, r0: u64, rows: u64, c0: u64, cols: u64) -> View {
    View { t, block: None, offset: (r0 * row_len + c0) as i64, ap: vec![(row_len as i64, rows), (1, cols)] }
}

/// How the tiled matmul's matmuls accumulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccStyle {
    /// `accumulate=None` everywhere (the compiler infers).
    Infer,
    /// `accumulate=(k > 0)`.
    Explicit,
    /// Legacy: `res = nl.zeros(...)` then `res += nl.matmul(...)`.
    ZeroFillAdd,
}

/// The tiled matmul of the tutorial, `result[M, N] = lhsT[K, M]^T @ rhs[K, N]`: loops over
/// M tiles of 128, N tiles of 512 and K tiles of 128 (sizes multiples of those), a PSUM
/// tile per output tile, the operand tiles loaded inside the K loop, the result copied to
/// SBUF and stored. Lines: 10 psum, 12/13 lhsT tile and load, 14/15 rhs tile and load, 16
/// matmul, 18 copy out, 19 store.
pub fn tiled_matmul(m: u64, k: u64, n: u64, dtype: DType, target: Target, style: AccStyle) -> Trace {
    let mut t = Tb::new("nki_matmul_tiled_", target);
    t.at(2);
    let lhs = t.input("lhsT", dtype, &[k, m]);
    let rhs = t.input("rhs", dtype, &[k, n]);
    let res = t.output("result", DType::Fp32, &[m, n]);
    let (site_p, site_a, site_b, site_c) = (t.site(), t.site(), t.site(), t.site());
    t.at(5).loop_begin(m / 128);
    for mi in 0..m / 128 {
        t.at(5).iteration(mi);
        t.at(6).loop_begin(n / 512);
        for ni in 0..n / 512 {
            t.at(6).iteration(ni);
            t.at(10);
            let ps = t.tensor_at_site("res_psum", Buffer::Psum, DType::Fp32, &[128, 512], site_p);
            if style == AccStyle::ZeroFillAdd {
                t.memset(tile(ps, 128, 512), 0.0);
            }
            t.at(11).loop_begin(k / 128);
            for ki in 0..k / 128 {
                t.at(11).iteration(ki);
                t.at(12);
                let a = t.tensor_at_site("lhsT_tile", Buffer::Sbuf, dtype, &[128, 128], site_a);
                t.at(13).dma(tile(a, 128, 128), window(lhs, m, ki * 128, 128, mi * 128, 128));
                t.at(14);
                let b = t.tensor_at_site("rhs_tile", Buffer::Sbuf, dtype, &[128, 512], site_b);
                t.at(15).dma(tile(b, 128, 512), window(rhs, n, ki * 128, 128, ni * 512, 512));
                let acc = match style {
                    AccStyle::Infer => Accumulate::Infer,
                    AccStyle::Explicit if ki == 0 => Accumulate::Overwrite,
                    AccStyle::Explicit => Accumulate::Accumulate,
                    AccStyle::ZeroFillAdd => Accumulate::Add,
                };
                t.at(16).matmul(tile(ps, 128, 512), tile(a, 128, 128), tile(b, 128, 512), acc);
            }
            t.at(11).loop_end();
            t.at(18);
            let c = t.tensor_at_site("res_sb", Buffer::Sbuf, DType::Fp32, &[128, 512], site_c);
            t.copy(tile(c, 128, 512), tile(ps, 128, 512), None);
            t.at(19).dma(window(res, n, mi * 128, 128, ni * 512, 512), tile(c, 128, 512));
        }
        t.at(6).loop_end();
    }
    t.at(5).loop_end();
    t.finish()
}
