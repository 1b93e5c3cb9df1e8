//! The tensors of a kernel under construction: HBM inputs, outputs and internal tensors,
//! tensors placed at given addresses, and the SBUF and PSUM allocators.

use penguin::{DType, FunctionView, IrBuilder, Memory, NDTile, TensorData, TensorId};

use super::{NeuronCodegen, ShapeOptions};
use crate::error::CodegenError;

impl<B: IrBuilder> NeuronCodegen<B> {
    /// Declare an HBM kernel input.
    pub fn add_input(&mut self, name: &str, shape: Vec<u64>, dtype: DType) -> Result<TensorId, CodegenError> {
        let id = self.add_hbm(name, shape, dtype)?;
        let mut inputs = self.view().inputs().to_vec();
        inputs.push(id);
        self.base.set_inputs(inputs);
        Ok(id)
    }

    /// Declare an HBM kernel output (stamped by [`Self::finalize_kernel`]).
    pub fn add_output(&mut self, name: &str, shape: Vec<u64>, dtype: DType) -> Result<TensorId, CodegenError> {
        let id = self.add_hbm(name, shape, dtype)?;
        self.outputs.push(id);
        Ok(id)
    }

    /// Declare an HBM tensor that is neither an input nor an output (scratch the kernel
    /// writes and reads; lowering places it with the others).
    pub fn add_internal_hbm(&mut self, name: &str, shape: Vec<u64>, dtype: DType) -> Result<TensorId, CodegenError> {
        self.add_hbm(name, shape, dtype)
    }

    /// Add an on-chip tensor (`data.memory` SBUF or PSUM) at the byte address
    /// `data.address` of each of its partitions, chosen by the caller's allocator instead
    /// of [`Self::alloc_sbuf`]'s bump pointer. It must fit the target: at most
    /// `statebuf_num_partitions` partitions, ending within the SBUF partition or the PSUM
    /// banks. Tensors may share bytes (an allocator reuses the storage of tensors whose live
    /// ranges are over): the accesses of tensors that overlap another's bytes are then also
    /// compared by storage, so every overlap in memory is a dependency edge.
    pub fn add_tensor_at(&mut self, data: TensorData) -> Result<TensorId, CodegenError> {
        let info = self.target.info();
        let capacity = match data.memory {
            Memory::Sbuf => u64::from(info.statebuf_par_size_in_bytes),
            Memory::Psum => u64::from(info.psum_num_banks * info.psum_par_size_in_bytes),
            Memory::Hbm => {
                return Err(CodegenError::BadOperand(format!(
                    "add_tensor_at places on-chip tensors, not `{}`",
                    data.name
                )))
            }
        };
        let Some(address) = data.address else {
            return Err(CodegenError::BadOperand(format!("add_tensor_at needs an address for `{}`", data.name)));
        };
        let partitions = data.partitions();
        if partitions == 0 || partitions > u64::from(info.statebuf_num_partitions) {
            return Err(CodegenError::TooManyPartitions {
                partitions: u32::try_from(partitions).unwrap_or(u32::MAX),
                statebuf_num_partitions: info.statebuf_num_partitions,
            });
        }
        let end = address.saturating_add(data.bytes_per_partition());
        if end > capacity {
            return Err(match data.memory {
                Memory::Psum => CodegenError::PsumBankOverflow {
                    bytes: end,
                    psum_par_size_in_bytes: info.psum_num_banks * info.psum_par_size_in_bytes,
                },
                _ => CodegenError::SbufCapacity {
                    tensor: data.name.clone(),
                    needed: data.bytes_per_partition(),
                    available: capacity,
                    used: address,
                    target: self.target,
                },
            });
        }
        if data.memory == Memory::Sbuf {
            self.stats.sbuf_peak_bytes_per_partition = self.stats.sbuf_peak_bytes_per_partition.max(end);
        }
        let memory = data.memory;
        let rows = data.partitions();
        let id = self.base.add_tensor(data)?;
        // Every on-chip tensor with an address whose bytes meet the new one's aliases it.
        let mut overlaps = false;
        for i in 0..id.index() {
            let Some(other) = TensorId::from_index(i).and_then(|t| self.view().tensor(t)) else { continue };
            let Some(a) = other.address.filter(|_| other.memory == memory) else { continue };
            let meets =
                a < end && address < a.saturating_add(other.bytes_per_partition()) && rows.min(other.partitions()) > 0;
            if meets {
                overlaps = true;
                self.set_aliased(TensorId(i as u32));
            }
        }
        if overlaps {
            self.set_aliased(id);
        }
        Ok(id)
    }

    fn set_aliased(&mut self, t: TensorId) {
        if self.aliased.len() <= t.index() {
            self.aliased.resize(t.index() + 1, false);
        }
        self.aliased[t.index()] = true;
    }

    fn add_hbm(&mut self, name: &str, shape: Vec<u64>, dtype: DType) -> Result<TensorId, CodegenError> {
        let t = TensorData { name: name.to_string(), shape, dtype, memory: Memory::Hbm, address: None };
        Ok(self.base.add_tensor(t)?)
    }

    /// SBUF bytes per partition still free on the target.
    pub fn sbuf_free_bytes(&self) -> u64 {
        u64::from(self.target.info().statebuf_par_size_in_bytes).saturating_sub(self.sbuf_next)
    }

    /// Allocate an SBUF tensor of `[partitions, free...]`, failing with the bytes needed and
    /// available per partition when the target's SBUF is full.
    pub fn alloc_sbuf(&mut self, name: &str, tile: &NDTile) -> Result<TensorId, CodegenError> {
        // A tile larger than a whole partition is named like any allocation that does not fit.
        let (sb_shape, _) = self.get_sb_and_psum_shape(tile, ShapeOptions::default()).map_err(|e| match e {
            CodegenError::SbufCapacity { needed, available, target, .. } => {
                CodegenError::SbufCapacity { tensor: name.to_string(), needed, available, used: self.sbuf_next, target }
            }
            other => other,
        })?;
        let bytes = tile.bytes_per_partition();
        let available = u64::from(self.target.info().statebuf_par_size_in_bytes);
        if self.sbuf_next + bytes > available {
            return Err(CodegenError::SbufCapacity {
                tensor: name.to_string(),
                needed: bytes,
                available,
                used: self.sbuf_next,
                target: self.target,
            });
        }
        let address = self.sbuf_next;
        // Keep allocations 64-byte aligned inside a partition.
        self.sbuf_next = (address + bytes).div_ceil(64) * 64;
        self.stats.sbuf_peak_bytes_per_partition = self.stats.sbuf_peak_bytes_per_partition.max(address + bytes);
        let t = TensorData {
            name: name.to_string(),
            shape: sb_shape,
            dtype: tile.dtype,
            memory: Memory::Sbuf,
            address: Some(address),
        };
        Ok(self.base.add_tensor(t)?)
    }

    /// Allocate PSUM bank `bank` as a `[partitions, 512]` fp32 tensor.
    pub fn alloc_psum_bank(&mut self, name: &str, bank: u32, partitions: u32) -> Result<TensorId, CodegenError> {
        let info = self.target.info();
        if bank >= info.psum_num_banks {
            return Err(CodegenError::PsumGroupsExhausted(info.psum_num_banks));
        }
        let tile = NDTile { partitions, free: vec![info.psum_par_size_in_bytes / 4], dtype: DType::Fp32 };
        let (_, psum_shape) = self.get_sb_and_psum_shape(&tile, ShapeOptions { psum: true })?;
        let t = TensorData {
            name: name.to_string(),
            shape: psum_shape.unwrap_or_default(),
            dtype: DType::Fp32,
            memory: Memory::Psum,
            address: Some(u64::from(bank * info.psum_par_size_in_bytes)),
        };
        Ok(self.base.add_tensor(t)?)
    }

    /// Allocate `count` consecutive PSUM banks from `first` as one `[partitions, 512 * count]`
    /// fp32 tensor (bank `first + b` at element offset `512 * b` of each partition).
    pub fn alloc_psum_banks(
        &mut self,
        name: &str,
        first: u32,
        count: u32,
        partitions: u32,
    ) -> Result<TensorId, CodegenError> {
        let info = self.target.info();
        if count == 0 || first + count > info.psum_num_banks {
            return Err(CodegenError::PsumGroupsExhausted(info.psum_num_banks));
        }
        let bank = info.psum_par_size_in_bytes / 4;
        let t = TensorData {
            name: name.to_string(),
            shape: vec![u64::from(partitions), u64::from(bank * count)],
            dtype: DType::Fp32,
            memory: Memory::Psum,
            address: Some(u64::from(first * info.psum_par_size_in_bytes)),
        };
        Ok(self.base.add_tensor(t)?)
    }
}
