//! Kernels for the physical cores of one logical NeuronCore (LNC=2 on trn2 and trn3).
//!
//! A [`Chip`] holds one [`Program`] per physical core. Each core has its own engines,
//! semaphores, SBUF and PSUM, so each program is an ordinary one-core program and every
//! tool that reads one reads a core; what the cores share is HBM: every core's program
//! declares the same HBM tensors at the same addresses. Nothing orders one core's
//! instructions against another's (the cores share no semaphore), so two cores that touch
//! the same HBM bytes, one of them writing, race; the simulator reports it.
//!
//! [`verify_chip`] checks the cores agree (target, kernel name, HBM layout), that the target
//! has that many cores in a logical core ([`penguin::TargetInfo::max_lnc`]), and verifies
//! each core's program, each error naming its core.

use serde::{Deserialize, Serialize};

use penguin::Target;

use crate::error::{BirError, VerifyError};
use crate::program::{HbmTensor, Program};
use crate::verify::verify_program;

/// The physical cores a logical core groups at most on any target.
pub const MAX_CORES: usize = 2;

/// One program per physical core, sharing HBM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chip {
    /// Core `i`'s program at index `i`.
    pub cores: Vec<Program>,
}

impl Chip {
    /// A chip of these cores' programs (not checked: see [`verify_chip`]).
    pub fn new(cores: Vec<Program>) -> Chip {
        Chip { cores }
    }

    /// The first core's program (every chip has one; an empty chip is refused by
    /// [`verify_chip`]).
    pub fn first(&self) -> Option<&Program> {
        self.cores.first()
    }

    /// The target (the first core's).
    pub fn target(&self) -> Target {
        self.first().map_or(Target::Trn2, |p| p.target)
    }

    /// The kernel's name (the first core's).
    pub fn kernel_name(&self) -> &str {
        self.first().map_or("", |p| p.kernel_name.as_str())
    }

    /// The shared HBM tensors.
    pub fn hbm(&self) -> &[HbmTensor] {
        self.first().map_or(&[], |p| p.hbm.as_slice())
    }

    /// The shared HBM size in bytes.
    pub fn hbm_size(&self) -> u64 {
        self.first().map_or(0, |p| p.hbm_size)
    }

    /// Instructions over every core.
    pub fn num_insts(&self) -> usize {
        self.cores.iter().map(Program::num_insts).sum()
    }

    /// Bytes moved to or from HBM over every core.
    pub fn hbm_traffic_bytes(&self) -> u64 {
        self.cores.iter().map(Program::hbm_traffic_bytes).fold(0, u64::saturating_add)
    }
}

/// What makes the cores of a chip disagree, if anything (checked before each core's
/// program).
fn layout_errors(chip: &Chip) -> Vec<VerifyError> {
    let mut errors = Vec::new();
    let Some(first) = chip.first() else {
        return vec![VerifyError::program("a chip needs at least one core")];
    };
    let max = first.target.info().max_lnc as usize;
    if chip.cores.len() > max {
        let why = if max == 1 { " (it has no logical NeuronCore of two cores: LNC=2 is trn2 and trn3)" } else { "" };
        errors.push(VerifyError::program(format!(
            "{} cores, but a logical NeuronCore of {} groups at most {max}{why}",
            chip.cores.len(),
            first.target
        )));
    }
    for (i, p) in chip.cores.iter().enumerate().skip(1) {
        let core = i as u32;
        if p.target != first.target {
            errors.push(
                VerifyError::program(format!("target {} differs from core 0's {}", p.target, first.target))
                    .on_core(core),
            );
        }
        if p.kernel_name != first.kernel_name {
            errors.push(
                VerifyError::program(format!(
                    "kernel `{}` differs from core 0's `{}`",
                    p.kernel_name, first.kernel_name
                ))
                .on_core(core),
            );
        }
        if p.hbm != first.hbm || p.hbm_size != first.hbm_size {
            errors.push(
                VerifyError::program("its HBM tensors differ from core 0's (the cores share one HBM layout)")
                    .on_core(core),
            );
        }
    }
    errors
}

/// Verify a chip: the cores agree and each core's program passes [`verify_program`]. Every
/// error is collected; an error about core 1 prints as `core1.pe[3] ...`.
pub fn verify_chip(chip: &Chip) -> Result<(), BirError> {
    let mut errors = layout_errors(chip);
    for (i, p) in chip.cores.iter().enumerate() {
        match verify_program(p) {
            Ok(()) => {}
            Err(BirError::Verify(es)) => errors.extend(es.into_iter().map(|e| e.on_core(i as u32))),
            Err(other) => return Err(other),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BirError::Verify(errors))
    }
}
