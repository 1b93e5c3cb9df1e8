//! Kernels for the physical cores of one logical NeuronCore (LNC=2 on trn2 and trn3).
//!
//! A [`Chip`] holds one [`Program`] per physical core. Each core has its own engines,
//! semaphores, SBUF and PSUM, so each program is an ordinary one-core program and every
//! tool that reads one reads a core; what the cores share is HBM: every core's program
//! declares the same HBM tensors at the same addresses.
//!
//! The cores order their work against each other only through the chip's *shared*
//! semaphores ([`Chip::shared`]): a semaphore whose name is listed there is one counter of
//! the chip in every core that declares it, so one core's signal can release another's wait
//! (a reduction waits for the other core's partial sums this way). Two cores that touch the
//! same HBM bytes, one of them writing, with no shared semaphore ordering them, race; the
//! simulator reports it.
//!
//! [`verify_chip`] checks the cores agree (target, kernel name, HBM layout), that the target
//! has that many cores in a logical core ([`penguin::TargetInfo::max_lnc`]), and verifies
//! each core's program, each error naming its core; the deadlock check runs the cores
//! together, through their shared semaphores.

use serde::{Deserialize, Serialize};

use penguin::Target;

use crate::error::{BirError, VerifyError};
use crate::program::{HbmTensor, Program};
use crate::verify::{check_instructions, find_deadlock};

/// The physical cores a logical core groups at most on any target.
pub const MAX_CORES: usize = 2;

/// One program per physical core, sharing HBM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chip {
    /// Core `i`'s program at index `i`.
    pub cores: Vec<Program>,
    /// The names of the semaphores the cores share: in every core that declares one, it is
    /// the same counter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<String>,
}

impl Chip {
    /// A chip of these cores' programs (not checked: see [`verify_chip`]).
    pub fn new(cores: Vec<Program>) -> Chip {
        Chip { cores, shared: Vec::new() }
    }

    /// A chip whose cores share the semaphores named `shared`.
    pub fn with_shared(cores: Vec<Program>, shared: Vec<String>) -> Chip {
        Chip { cores, shared }
    }

    /// The chip's semaphores numbered as one table: for each core, the chip-wide index of
    /// each of its semaphores (a shared one has the same index in every core), and the
    /// table's size. Core `c`'s own semaphores follow those of cores `0..c`; the shared ones
    /// come first.
    pub fn semaphore_table(&self) -> (Vec<Vec<usize>>, usize) {
        let mut next = self.shared.len();
        let table = self
            .cores
            .iter()
            .map(|p| {
                p.semaphores
                    .iter()
                    .map(|name| {
                        self.shared.iter().position(|s| s == name).unwrap_or_else(|| {
                            next += 1;
                            next - 1
                        })
                    })
                    .collect()
            })
            .collect();
        (table, next)
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
    for name in undeclared_shared(chip) {
        errors.push(VerifyError::program(format!("shared semaphore `{name}` is declared by no core")));
    }
    for (i, name) in chip.shared.iter().enumerate() {
        if chip.shared[..i].contains(name) {
            errors.push(VerifyError::program(format!("shared semaphore `{name}` is listed twice")));
        }
    }
    errors
}

/// The shared semaphores no core declares.
fn undeclared_shared(chip: &Chip) -> impl Iterator<Item = &str> {
    chip.shared
        .iter()
        .filter(|name| !chip.cores.iter().any(|p| p.semaphores.iter().any(|s| s == *name)))
        .map(String::as_str)
}

/// Verify a chip: the cores agree, each core's program passes the rules of
/// [`crate::verify_program`], and the cores run together through their shared semaphores
/// without a deadlock. Every error is collected; an error about core 1 prints as
/// `core1.pe[3] ...`.
pub fn verify_chip(chip: &Chip) -> Result<(), BirError> {
    let mut errors = layout_errors(chip);
    for (i, p) in chip.cores.iter().enumerate() {
        errors.extend(check_instructions(p).into_iter().map(|e| e.on_core(i as u32)));
    }
    if errors.is_empty() {
        let (table, nsem) = chip.semaphore_table();
        let programs: Vec<(&Program, &[usize])> =
            chip.cores.iter().zip(&table).map(|(p, t)| (p, t.as_slice())).collect();
        if let Some(stuck) = find_deadlock(&programs, nsem) {
            errors.push(VerifyError::program(stuck));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(BirError::Verify(errors))
    }
}
