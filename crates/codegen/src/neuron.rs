//! `NeuronCodegen`: the layer every emitter funnels through (normalize operands, wire
//! dependency edges, insert, finalize) and the tile geometry primitive; the tensors it
//! declares and allocates (HBM, SBUF, PSUM) are in `tensors.rs`, each kind's operand
//! normalization in `operands.rs`.

use penguin::{
    verify::is_identifier, Access, AccessPattern, DepTracker, EngineAccumulationType, FreeDims, Function, FunctionView,
    InstData, InstId, InstTile, IrBuilder, Memory, NDTile, Region, SourceLoc, Target, TensorData, TensorId, Tile,
};

use crate::error::CodegenError;

mod operands;
mod tensors;

/// Options of [`NeuronCodegen::get_sb_and_psum_shape`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShapeOptions {
    /// Also size the PSUM half (the tile is a matmul result).
    pub psum: bool,
}

/// What the codegen layer counted while building.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodegenStats {
    /// Matmul instructions.
    pub matmuls: u64,
    /// Accumulation groups opened.
    pub psum_groups: u64,
    /// Most accumulation groups live at once.
    pub max_live_psum_groups: u32,
    /// Highest SBUF byte allocated in a partition.
    pub sbuf_peak_bytes_per_partition: u64,
    /// The GEMM buffers refilled in a loop that have one slot instead of two because two do
    /// not fit SBUF (set by the GEMM planner).
    pub single_buffered: SingleBuffered,
}

/// The GEMM planner's refilled buffers that were single-buffered for SBUF capacity: each
/// refill then waits for the last reads of the previous contents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SingleBuffered {
    /// The stationary (A^T) block of `blocked-mn` / `blocked-mnk`.
    pub a_block: bool,
    /// The moving (B) block of `blocked-mn` / `blocked-mnk`.
    pub b_block: bool,
    /// The fp32 result block of `blocked-mnk`.
    pub result: bool,
}

impl SingleBuffered {
    /// The names of the single-buffered buffers (their SBUF tensor names without the slot
    /// number), in the order `a_block`, `b_block`, `result`.
    pub fn names(&self) -> Vec<&'static str> {
        [(self.a_block, "a_block"), (self.b_block, "b_block"), (self.result, "result")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect()
    }
}

/// The NeuronCodegen layer over a base builder `B` (composition stands for the seed's
/// subclassing).
#[derive(Debug)]
pub struct NeuronCodegen<B: IrBuilder> {
    base: B,
    target: Target,
    kernel_name: String,
    outputs: Vec<TensorId>,
    deps: DepTracker,
    sbuf_next: u64,
    psum_live: Vec<(TensorId, penguin::Region)>,
    stats: CodegenStats,
    /// Per tensor: whether its bytes overlap another on-chip tensor's (see
    /// [`Self::add_tensor_at`]); the accesses of such tensors are also tracked by storage.
    aliased: Vec<bool>,
    /// Dependency tracking by storage (one key per memory, regions in bytes) for the
    /// accesses of aliased tensors.
    storage_deps: DepTracker,
    /// The source location given to every instruction inserted from now on.
    srcloc: Option<SourceLoc>,
    /// Instructions of repeating loop iterations skipped so far ([`Self::skip`]): an
    /// instruction's number in the whole program is its place among those emitted plus
    /// the skipped ones before it, and its edges name instructions by those numbers.
    skipped: u32,
}

impl<B: IrBuilder> NeuronCodegen<B> {
    /// Open a kernel named `kernel_name` on `target` over a base builder.
    pub fn new(base: B, target: Target, kernel_name: impl Into<String>) -> Self {
        NeuronCodegen {
            base,
            target,
            kernel_name: kernel_name.into(),
            outputs: Vec::new(),
            deps: DepTracker::new(),
            sbuf_next: 0,
            psum_live: Vec::new(),
            stats: CodegenStats::default(),
            aliased: Vec::new(),
            storage_deps: DepTracker::new(),
            srcloc: None,
            skipped: 0,
        }
    }

    /// Set the source location ([`penguin::srcloc`]) of the instructions inserted from now
    /// on, until the next call (`None`: none), as Cranelift's `FunctionBuilder::set_srcloc`.
    /// Instructions an emitter inserts on the way (a broadcast's memset) get it too.
    pub fn set_srcloc(&mut self, loc: Option<SourceLoc>) {
        self.srcloc = loc;
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The function built so far.
    pub fn function(&self) -> &Function {
        self.base.function()
    }

    /// The function built so far, taken out unverified ([`IrBuilder::take_function`]).
    pub(crate) fn take_function(&mut self) -> Function {
        self.base.take_function()
    }

    /// The function built so far, as codegen itself reads it: only through [`FunctionView`].
    pub(crate) fn view(&self) -> &impl FunctionView {
        self.base.function()
    }

    /// Counters so far.
    pub fn stats(&self) -> CodegenStats {
        self.stats
    }

    /// Instructions of the whole program so far: the emitted ones and the skipped ones.
    pub fn program_len(&self) -> u64 {
        self.base.function().num_insts() as u64 + u64::from(self.skipped)
    }

    /// Skip `periods` repetitions of the `len` instructions just emitted (the last period of
    /// a loop whose run started at instruction `from`; the skipped iterations would make the
    /// same accesses to the same on-chip places): the live accesses are moved past them
    /// ([`penguin::DepTracker::skip_periods`]), the instructions emitted next are numbered
    /// after the skipped ones, and the skipped iterations' `matmuls` and accumulation
    /// `groups` are counted. Fails when the program would number more instructions than ids
    /// can.
    pub fn skip(
        &mut self,
        from: u64,
        (len, periods): (u64, u64),
        matmuls: u64,
        groups: u64,
    ) -> Result<(), CodegenError> {
        let too_long =
            || CodegenError::Unsupported("the program has more instructions than ids can number (u32)".into());
        let count = len.checked_mul(periods).ok_or_else(too_long)?;
        let now = self.program_len();
        let total = now.checked_add(count).filter(|&n| n <= u64::from(u32::MAX)).ok_or_else(too_long)?;
        let id = |x: u64| u32::try_from(x).map(InstId).map_err(|_| too_long());
        let (ids, len32, periods32) = ((id(from)?, id(now)?), id(len)?.0, id(periods)?.0);
        let func = self.base.function();
        let on_chip = |t: TensorId| func.tensor(t).is_some_and(|d| d.memory.is_on_chip());
        self.deps.skip_periods(ids, len32, periods32, on_chip);
        self.storage_deps.skip_periods(ids, len32, periods32, |_| true);
        self.skipped = u32::try_from(total - func.num_insts() as u64).map_err(|_| too_long())?;
        self.stats.matmuls += matmuls;
        self.stats.psum_groups += groups;
        Ok(())
    }

    /// A hint that about `additional` more instructions will be emitted: the base builder
    /// reserves room for them at once (see [`IrBuilder::reserve_insts`]).
    pub fn reserve_insts(&mut self, additional: usize) {
        self.base.reserve_insts(additional);
    }

    /// Rename the kernel being built (checked by [`Self::finalize_kernel`]).
    pub fn set_kernel_name(&mut self, name: impl Into<String>) {
        self.base.set_kernel_name(name.into());
    }

    /// The seed's `get_sb_and_psum_shape`: the `(sb_shape, psum_shape)` of a tile, checking
    /// the 128-partition statebuf geometry (`statebuf_num_partitions`, capacity per partition)
    /// and, when asked, that the fp32 PSUM half fits one bank (`psum_par_size_in_bytes`).
    pub fn get_sb_and_psum_shape(
        &self,
        tile: &NDTile,
        opts: ShapeOptions,
    ) -> Result<(Vec<u64>, Option<Vec<u64>>), CodegenError> {
        let info = self.target.info();
        if tile.partitions == 0 || tile.partitions > info.statebuf_num_partitions {
            return Err(CodegenError::TooManyPartitions {
                partitions: tile.partitions,
                statebuf_num_partitions: info.statebuf_num_partitions,
            });
        }
        let free = tile.free_elems();
        let sb_shape = vec![u64::from(tile.partitions), free];
        let available = u64::from(info.statebuf_par_size_in_bytes);
        if tile.bytes_per_partition() > available {
            return Err(CodegenError::SbufCapacity {
                tensor: format!("{:?} {} tile", tile.free, tile.dtype),
                needed: tile.bytes_per_partition(),
                available,
                used: 0,
                target: self.target,
            });
        }
        let psum_shape = if opts.psum {
            let bytes = free * 4;
            if bytes > u64::from(info.psum_par_size_in_bytes) {
                return Err(CodegenError::PsumBankOverflow {
                    bytes,
                    psum_par_size_in_bytes: info.psum_par_size_in_bytes,
                });
            }
            Some(vec![u64::from(tile.partitions), free])
        } else {
            None
        };
        Ok((sb_shape, psum_shape))
    }

    /// The seed's `combine_tiles`: fold operand tiles into canonical [`InstTile`]s
    /// (canonical par/free indices), checking dimension by dimension that they agree: equal
    /// partition counts and equal elements per partition. Mismatches name both shapes.
    ///
    /// A broadcast operand becomes a memset-broadcast tile: a `[partitions, 1]` SBUF tensor
    /// filled by a memset, viewed with stride 0 along every free dimension of its shape.
    pub fn combine_tiles(&mut self, tiles: &[Tile]) -> Result<Vec<InstTile>, CodegenError> {
        let mut out: Vec<InstTile> = Vec::with_capacity(tiles.len());
        // The logical shape of each operand: an indirect tile's is its gathered rows.
        let mut shapes: Vec<Vec<u64>> = Vec::with_capacity(tiles.len());
        for t in tiles {
            let c = match t {
                Tile::Broadcast { value, shape } => self.memset_broadcast_tile(*value, shape)?,
                other => self.canonical_tile(other)?,
            };
            shapes.push(crate::indirect::logical_shape(t, &c));
            out.push(c);
        }
        if let Some(first) = shapes.first() {
            for s in &shapes[1..] {
                if crate::indirect::rows_and_elems(s) != crate::indirect::rows_and_elems(first) {
                    return Err(CodegenError::IncompatibleTiles { a: first.clone(), b: s.clone() });
                }
            }
        }
        Ok(out)
    }

    fn tensor(&self, id: TensorId) -> Result<&TensorData, CodegenError> {
        self.view().tensor(id).ok_or_else(|| CodegenError::BadOperand(format!("operand tensor {id} does not exist")))
    }

    fn inst_tile(&self, tensor: TensorId, ap: &AccessPattern, want: &[Memory]) -> Result<InstTile, CodegenError> {
        let t = self.tensor(tensor)?;
        if !want.contains(&t.memory) {
            return Err(CodegenError::BadOperand(format!(
                "operand tensor `{}` is in {}, expected {:?}",
                t.name, t.memory, want
            )));
        }
        Ok(InstTile { tensor, memory: t.memory, dtype: t.dtype, ap: ap.canonicalize() })
    }

    fn canonical_tile(&self, tile: &Tile) -> Result<InstTile, CodegenError> {
        match tile {
            Tile::Data(d) => {
                let t = self.tensor(d.tensor)?;
                if !t.memory.is_on_chip() {
                    return Err(CodegenError::NotADataTile);
                }
                self.inst_tile(d.tensor, &d.ap, &[Memory::Sbuf, Memory::Psum])
            }
            Tile::Memref(m) => {
                let ap = AccessPattern {
                    start_partition: 0,
                    partitions: m.rows,
                    offset: m.offset,
                    free: FreeDims::one(m.cols),
                };
                self.inst_tile(m.tensor, &ap, &[Memory::Hbm])
            }
            Tile::MemrefND(m) => {
                let Some((first, rest)) = m.dims.split_first() else {
                    return Err(CodegenError::BadOperand("MemrefTileND needs at least one dimension".into()));
                };
                let ap = AccessPattern { start_partition: 0, partitions: *first, offset: m.offset, free: rest.into() };
                self.inst_tile(m.tensor, &ap, &[Memory::Hbm])
            }
            Tile::Psum(p) => {
                let ap = AccessPattern::on_chip(p.start_partition, p.partitions, p.offset, p.free_size);
                self.inst_tile(p.tensor, &ap, &[Memory::Psum]).map_err(|_| CodegenError::ResultNotPsum)
            }
            Tile::Inst(t) => {
                let mut c = self.inst_tile(t.tensor, &t.ap, &[t.memory])?;
                c.dtype = t.dtype;
                Ok(c)
            }
            Tile::IndirectMemrefND(i) => crate::indirect::table_tile(i, self.tensor(i.tensor)?),
            Tile::Broadcast { .. } => Err(CodegenError::BadOperand(
                "a broadcast operand is materialized by combine_tiles, not canonicalized".into(),
            )),
        }
    }

    /// The seed's `process_new_neuroninst`: read the instruction's kind, dispatch (the matmul
    /// family checks its PSUM result and accumulation-group budget), normalize its operands
    /// with [`Self::combine_tiles`], wire its dependency edges ([`Self::process_dep_edges`]),
    /// then `insert` it (the only way an instruction reaches the base builder).
    pub fn process_new_neuroninst(&mut self, mut inst: InstData) -> Result<InstId, CodegenError> {
        // A long plan stops within a few thousand instructions of the caller's cancellation.
        if self.base.function().num_insts().is_multiple_of(penguin::cancel::POLL_EVERY) && self.base.cancelled() {
            return Err(CodegenError::Interrupted);
        }
        self.normalize_operands(&mut inst)?;
        let deps = self.process_dep_edges(&inst);
        Ok(self.insert(inst, deps))
    }

    /// PE tiling legality on this target: sizes 128 or 64 (32 on trn2/trn3), positions
    /// multiples of the size, inside the 128x128 array.
    pub fn check_pe_tile(&self, pos: penguin::TilePosition, size: penguin::TileSize) -> Result<(), CodegenError> {
        let small = if self.target.info().pe_tile_32 { 32 } else { 64 };
        for (what, at, len) in [("row", pos.row, size.rows), ("column", pos.col, size.cols)] {
            let legal = len.is_power_of_two() && (small..=128).contains(&len);
            if !legal || !at.is_multiple_of(len) || at + len > 128 {
                return Err(CodegenError::BadGemm(format!(
                    "PE tile {what} position {at} with size {len} is not legal on {} (sizes 128, 64{}; positions multiples of the size)",
                    self.target,
                    if small == 32 { ", 32" } else { "" }
                )));
            }
        }
        Ok(())
    }

    /// Materialize a broadcast scalar (see [`Self::combine_tiles`]).
    fn memset_broadcast_tile(&mut self, value: f64, shape: &NDTile) -> Result<InstTile, CodegenError> {
        let name = format!("broadcast{}", self.view().num_tensors());
        let scalar = NDTile { partitions: shape.partitions, free: vec![1], dtype: shape.dtype };
        let tensor = self.alloc_sbuf(&name, &scalar)?;
        let dst = InstTile {
            tensor,
            memory: Memory::Sbuf,
            dtype: shape.dtype,
            ap: AccessPattern::on_chip(0, shape.partitions, 0, 1),
        };
        // Its operand is already canonical, so this only wires its edges and inserts it.
        self.process_new_neuroninst(InstData::Memset(penguin::MemsetData {
            engine: penguin::ComputeEngine::Pool,
            dst,
            value,
        }))?;
        let free = shape.free.iter().map(|&n| penguin::Dim::new(0, n)).collect();
        let ap =
            AccessPattern { start_partition: 0, partitions: penguin::Dim::new(1, shape.partitions), offset: 0, free };
        Ok(InstTile { tensor, memory: Memory::Sbuf, dtype: shape.dtype, ap })
    }

    /// [`Self::canonical_tile`] of `Tile::Inst(t)`, in place: the tensor must exist in the
    /// memory the tile names; the pattern is canonicalized without copying the tile.
    fn canonical_in_place(&self, t: &mut InstTile) -> Result<(), CodegenError> {
        let data = self.tensor(t.tensor)?;
        if data.memory != t.memory {
            return Err(CodegenError::BadOperand(format!(
                "operand tensor `{}` is in {}, expected {:?}",
                data.name,
                data.memory,
                [t.memory]
            )));
        }
        t.ap.canonicalize_in_place();
        Ok(())
    }

    /// [`Self::combine_tiles`] of `Tile::Inst` operands, in place: canonicalize each (the
    /// first failure is the error), then check that they agree on partitions and elements per
    /// partition (canonicalization keeps both).
    fn combine_in_place(&self, tiles: &mut [&mut InstTile]) -> Result<(), CodegenError> {
        for t in tiles.iter_mut() {
            self.canonical_in_place(t)?;
        }
        let key = |t: &InstTile| (t.ap.partitions.num, t.ap.free_elems());
        if let Some((first, rest)) = tiles.split_first() {
            if let Some(t) = rest.iter().find(|t| key(t) != key(first)) {
                return Err(CodegenError::IncompatibleTiles { a: first.ap.shape(), b: t.ap.shape() });
            }
        }
        Ok(())
    }

    fn track_psum_group(&mut self, dst: &InstTile, flags: EngineAccumulationType) -> Result<(), CodegenError> {
        let region = dst.ap.region(true);
        if flags.contains(EngineAccumulationType::START) {
            self.stats.psum_groups += 1;
            if !flags.contains(EngineAccumulationType::STOP) {
                let limit = self.target.info().psum_num_banks;
                if self.psum_live.len() as u32 >= limit {
                    return Err(CodegenError::PsumGroupsExhausted(limit));
                }
                self.psum_live.push((dst.tensor, region));
            }
            let live = self.psum_live.len() as u32 + u32::from(flags.contains(EngineAccumulationType::STOP));
            self.stats.max_live_psum_groups = self.stats.max_live_psum_groups.max(live);
        } else if flags.contains(EngineAccumulationType::STOP) {
            self.psum_live.retain(|(t, r)| !(*t == dst.tensor && *r == region));
        }
        Ok(())
    }

    /// The seed's `process_dep_edges`: RAW/WAR/WAW edges from earlier instructions whose tiles
    /// overlap this one's.
    ///
    /// The accesses to tensors that share bytes with others ([`Self::add_tensor_at`]) are
    /// also compared by storage, so edges between different tensors overlapping in memory
    /// are found too.
    pub fn process_dep_edges(&mut self, inst: &InstData) -> Vec<penguin::Dep> {
        let func = self.base.function();
        let next = InstId(func.num_insts() as u32 + self.skipped);
        let mut deps = self.deps.process(next, inst, |t| func.tensor(t));
        if self.aliased.iter().any(|&a| a) {
            let mut accesses: Vec<(TensorId, Region, Access)> = Vec::new();
            inst.for_each_operand(|tile, access| {
                if !self.aliased.get(tile.tensor.index()).copied().unwrap_or(false) {
                    return;
                }
                if let Some(region) = func.tensor(tile.tensor).and_then(|t| storage_region(&tile.ap, t)) {
                    accesses.push(region_key(tile.memory, region, access));
                }
            });
            if !accesses.is_empty() {
                for d in self.storage_deps.process_accesses(next, &accesses) {
                    if !deps.iter().any(|e| e.from == d.from) {
                        deps.push(d);
                    }
                }
            }
        }
        deps
    }

    /// The seed's `insert`: append to the function and record its dependency edges. Private:
    /// every instruction reaches it through [`Self::process_new_neuroninst`].
    fn insert(&mut self, inst: InstData, deps: Vec<penguin::Dep>) -> InstId {
        let id = self.base.insert(inst, deps);
        if let Some(loc) = &self.srcloc {
            self.base.set_srcloc(id, loc.clone());
        }
        id
    }

    /// The seed's `finalize_kernel`: check the kernel name (`Kernel name mismatch` when it
    /// differs from the name opened, `Unsupported kernel name <name>` when not an
    /// identifier), set the outputs, stamp `debug_kernel_function_name`.
    pub fn finalize_kernel(&mut self) -> Result<&Function, CodegenError> {
        let found = self.view().kernel_name().to_string();
        if !is_identifier(&found) {
            return Err(CodegenError::UnsupportedKernelName(found));
        }
        if found != self.kernel_name {
            return Err(CodegenError::KernelNameMismatch { expected: self.kernel_name.clone(), found });
        }
        self.base.set_outputs(self.outputs.clone());
        self.base.set_debug_kernel_function_name(format!("{}.{}", self.kernel_name, self.target));
        Ok(self.base.function())
    }

    /// The seed's `finalize`: delegate to the base builder's finalize (the verifier).
    pub fn finalize(self) -> Result<Function, CodegenError> {
        Ok(self.base.finalize()?)
    }
}

/// The bytes an on-chip access touches in its memory: the region of `ap` in `t`, its
/// element bounds turned into byte addresses of the partitions (`None` for HBM or an
/// unallocated tensor).
fn storage_region(ap: &AccessPattern, t: &TensorData) -> Option<Region> {
    let address = i64::try_from(t.address?).ok()?;
    if !t.memory.is_on_chip() {
        return None;
    }
    let size = i64::from(t.dtype.size_bytes());
    let r = ap.region(true);
    let byte = |e: i64| e.saturating_mul(size).saturating_add(address);
    Some(Region { lo: byte(r.lo), hi: byte(r.hi), window: None, ..r })
}

/// A storage access keyed by its memory (SBUF 0, PSUM 1).
fn region_key(memory: Memory, region: Region, access: Access) -> (TensorId, Region, Access) {
    (TensorId(u32::from(memory == Memory::Psum)), region, access)
}

#[cfg(test)]
mod tests;
