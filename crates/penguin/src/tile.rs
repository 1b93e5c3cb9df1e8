//! The seven tile types of the seed's operand vocabulary.
//!
//! Emitters describe operands with whichever tile type is natural ([`DataTile`] for an
//! on-chip view, [`MemrefTile`] for an HBM window, [`NeuronPSUMTensor`] for an accumulator
//! region, ...). The codegen layer's `combine_tiles` folds them into [`InstTile`], the one
//! canonical operand form that instructions store.

use serde::{Deserialize, Serialize};

use crate::ap::{AccessPattern, Dim};
use crate::dtype::DType;
use crate::entity::{Memory, TensorId};

/// A logical n-d tile: a partition dimension, free dimensions and a dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NDTile {
    /// Partition (first) dimension size.
    pub partitions: u32,
    /// Free dimension sizes.
    pub free: Vec<u32>,
    /// Element type.
    pub dtype: DType,
}

impl NDTile {
    /// Elements per partition.
    pub fn free_elems(&self) -> u64 {
        self.free.iter().fold(1u64, |a, &n| a.saturating_mul(u64::from(n)))
    }

    /// Bytes per partition.
    pub fn bytes_per_partition(&self) -> u64 {
        self.free_elems().saturating_mul(u64::from(self.dtype.size_bytes()))
    }
}

/// A view of an on-chip tensor: the tensor plus a partition range and free access pattern.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DataTile {
    /// The viewed tensor (SBUF or PSUM).
    pub tensor: TensorId,
    /// The elements viewed.
    pub ap: AccessPattern,
}

/// A 2-d window of an HBM tensor: row `i` of the window lands on partition `i`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemrefTile {
    /// The HBM tensor.
    pub tensor: TensorId,
    /// Element offset of the window's first element.
    pub offset: i64,
    /// Rows (the partition dimension once on chip).
    pub rows: Dim,
    /// Columns (the free dimension).
    pub cols: Dim,
}

/// An n-d window of an HBM tensor; the first dimension lands on partitions.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemrefTileND {
    /// The HBM tensor.
    pub tensor: TensorId,
    /// Element offset of the window's first element.
    pub offset: i64,
    /// Dimensions, the partition one first.
    pub dims: Vec<Dim>,
}

/// An HBM tile whose partition dimension is indexed through an int32 index tensor: row `i`
/// of the tile is row `index[i]` of the tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndirectMemrefTileND {
    /// The indexed HBM tensor.
    pub tensor: TensorId,
    /// The int32 index tensor.
    pub index: TensorId,
    /// Element offset of row 0 of the tensor.
    pub offset: i64,
    /// Elements between consecutive rows of the tensor.
    pub row_stride: i64,
    /// Number of rows gathered (index entries used).
    pub rows: u32,
    /// Free dimensions within one row.
    pub free: Vec<Dim>,
}

/// A PSUM accumulator region: a bank, a partition range and a free size in fp32 elements.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NeuronPSUMTensor {
    /// The PSUM tensor.
    pub tensor: TensorId,
    /// First partition.
    pub start_partition: u32,
    /// Number of partitions.
    pub partitions: u32,
    /// Element offset inside the tensor's partition.
    pub offset: i64,
    /// fp32 elements per partition.
    pub free_size: u32,
}

/// The canonical operand form stored in instructions.
///
/// `memory` and `dtype` repeat the tensor's so that free functions (the matmul combines) can
/// check an operand without the function; the verifier checks that they agree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstTile {
    /// The tensor.
    pub tensor: TensorId,
    /// Its memory.
    pub memory: Memory,
    /// Its dtype.
    pub dtype: DType,
    /// Which elements, in canonical form.
    pub ap: AccessPattern,
}

impl InstTile {
    /// `(start, count)` of the partitions (the seed's `canonical_par_indices`).
    pub fn canonical_par_indices(&self) -> (u32, u32) {
        self.ap.canonical_par_indices()
    }

    /// Canonical free dimensions (the seed's `canonical_free_indices`).
    pub fn canonical_free_indices(&self) -> Vec<Dim> {
        self.ap.canonical_free_indices()
    }

    /// Partition count.
    pub fn partitions(&self) -> u32 {
        self.ap.partitions.num
    }

    /// Elements per partition.
    pub fn free_elems(&self) -> u64 {
        self.ap.free_elems()
    }

    /// The logical tile this operand describes.
    pub fn nd_tile(&self) -> NDTile {
        NDTile {
            partitions: self.ap.partitions.num,
            free: self.ap.free.iter().map(|d| d.num).collect(),
            dtype: self.dtype,
        }
    }
}

/// Any operand an emitter may hand to `combine_tiles`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Tile {
    /// A view of an on-chip tensor.
    Data(DataTile),
    /// A 2-d HBM window.
    Memref(MemrefTile),
    /// An n-d HBM window.
    MemrefND(MemrefTileND),
    /// An indexed HBM window.
    IndirectMemrefND(IndirectMemrefTileND),
    /// A PSUM accumulator region.
    Psum(NeuronPSUMTensor),
    /// An operand already in canonical form.
    Inst(InstTile),
    /// A broadcast scalar of the given logical shape: becomes a memset-broadcast tile.
    Broadcast {
        /// The value broadcast.
        value: f64,
        /// Its logical shape.
        shape: NDTile,
    },
}
