//! Placeholder: being written.
use core::fmt;
/// Errors of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestError {}
impl ManifestError {
    /// Runtime status.
    pub fn status(&self) -> crate::Status { match *self {} }
}
impl fmt::Display for ManifestError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
/// Warnings of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestWarning {}
impl fmt::Display for ManifestWarning {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}

// TEMPORARY (hal branch): the two discriminator enums below stand in for the ones the
// schema generator will emit (same names, variants and numeric values). Delete this block
// when the generated `manifest` module lands.

/// Device-memory usage class (`spec/neff-format.md` §11.8), used for accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
#[allow(missing_docs)]
pub enum UsageClass {
    Generic = 0,
    InstrPe = 1,
    InstrAct = 2,
    InstrPool = 3,
    Io = 4,
    DramSpill = 5,
    Weight = 6,
    Notification = 7,
    ActTable = 8,
    InstrDve = 9,
    InstrSp = 10,
    Scratchpad = 11,
    Tensor = 12,
    UcodeLib = 13,
    PoolStdio = 14,
    Cc = 15,
    ScratchpadNotShared = 16,
    XtCc = 17,
    DmaRing = 18,
    DmaRingSpill = 19,
    DmaRingIo = 20,
    DmaRingCollectives = 21,
}

impl UsageClass {
    /// The lowercase name (`"instr_pe"`).
    pub const fn as_str(&self) -> &'static str {
        match self {
            UsageClass::Generic => "generic",
            UsageClass::InstrPe => "instr_pe",
            UsageClass::InstrAct => "instr_act",
            UsageClass::InstrPool => "instr_pool",
            UsageClass::Io => "io",
            UsageClass::DramSpill => "dram_spill",
            UsageClass::Weight => "weight",
            UsageClass::Notification => "notification",
            UsageClass::ActTable => "act_table",
            UsageClass::InstrDve => "instr_dve",
            UsageClass::InstrSp => "instr_sp",
            UsageClass::Scratchpad => "scratchpad",
            UsageClass::Tensor => "tensor",
            UsageClass::UcodeLib => "ucode_lib",
            UsageClass::PoolStdio => "pool_stdio",
            UsageClass::Cc => "cc",
            UsageClass::ScratchpadNotShared => "scratchpad_not_shared",
            UsageClass::XtCc => "xt_cc",
            UsageClass::DmaRing => "dma_ring",
            UsageClass::DmaRingSpill => "dma_ring_spill",
            UsageClass::DmaRingIo => "dma_ring_io",
            UsageClass::DmaRingCollectives => "dma_ring_collectives",
        }
    }
}

/// Runtime architecture (`al_hal_tpb_arch_type`, `spec/neff-format.md` §11.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Arch {
    Sunda = 2,
    Cayman = 3,
    Mariana = 4,
}

impl Arch {
    /// The lowercase name (`"cayman"`).
    pub const fn as_str(&self) -> &'static str {
        match self {
            Arch::Sunda => "sunda",
            Arch::Cayman => "cayman",
            Arch::Mariana => "mariana",
        }
    }
}
