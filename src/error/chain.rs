//! Errors and warnings of the chain checks (what the manifests name against what the tar
//! holds), and the kinds of manifest the chain names.

use core::fmt;

use super::{Status, Text};

/// Short text for member names in chain errors (context: a longer name keeps its tail).
pub type MemberText = Text<40>;

/// Shorter text, where a variant carries a number beside it (so that `ErrorKind`, which every
/// `Result` of the core carries, does not grow).
pub type ShortText = Text<24>;

/// A chain check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainError {
    /// Neither `neff.json` nor a `kelf-0.json` / `kelf-a.json` to fall back on.
    NeffJsonMissing {
        /// The NEFF's name (its header's).
        neff: MemberText,
    },
    /// A member that a manifest names is not in the archive.
    MemberMissing {
        /// The missing member.
        member: MemberText,
    },
    /// An engine's instruction stream is larger than the runtime's `u32` cap.
    InstrTooLarge {
        /// Its size in bytes.
        size: u64,
        /// The instruction stream's member (its tail: the error's context names it whole).
        member: ShortText,
    },
    /// A `file` variable's payload does not have the variable's size.
    VarSizeMismatch {
        /// The size `def.json` declares.
        declared: u64,
        /// The bytes the payload holds (a `.npy`'s array data).
        actual: u64,
    },
    /// Two subgraphs of the chain use the same directory.
    DuplicateSubgraph,
    /// A member the chain names as one kind of manifest was read, before that manifest, as
    /// another (its name suggested so); the single pass cannot read it again.
    ReadAsOther {
        /// How it was read.
        read_as: super::ManifestKind,
        /// What the chain names it as.
        named_as: super::ManifestKind,
    },
}

impl ChainError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            ChainError::NeffJsonMissing { .. } => 1,
            ChainError::MemberMissing { .. } => 2,
            ChainError::InstrTooLarge { .. } => 3,
            ChainError::VarSizeMismatch { .. } => 4,
            ChainError::DuplicateSubgraph => 5,
            ChainError::ReadAsOther { .. } => 6,
        }
    }
}

impl ChainError {
    /// The runtime status.
    pub fn status(&self) -> Status {
        Status::Invalid
    }
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::NeffJsonMissing { neff } => {
                write!(
                    f,
                    "Invalid NN: {neff}, neff.json is missing (and no kelf-0.json or kelf-a.json to fall back on)"
                )
            }
            ChainError::MemberMissing { member } => write!(f, "member {member} is missing from the archive"),
            ChainError::InstrTooLarge { size, member } => {
                write!(f, "Instruction size {size} for {member} exceeds maximum supported size {}", u32::MAX)
            }
            ChainError::VarSizeMismatch { declared, actual } => {
                write!(f, "variable size {declared} does not match its payload's {actual} bytes")
            }
            ChainError::DuplicateSubgraph => f.write_str("two graphs name the same subgraph directory"),
            ChainError::ReadAsOther { read_as, named_as } => write!(
                f,
                "the chain names this member as a {}, but it came before the manifest naming it and was read as a {}",
                named_as.as_str(),
                read_as.as_str()
            ),
        }
    }
}

/// Something the chain checks noticed that does not fail a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainWarning {
    /// The KELF's graph count differs from the header's `lnc_size`.
    GraphCount {
        /// Graphs in the KELF.
        graphs: u32,
        /// `max(1, lnc_size)`.
        lnc_size: u32,
    },
    /// An instruction stream is not a whole number of 64-byte slots.
    InstrNotMultipleOf64 {
        /// Its size in bytes.
        size: u64,
    },
    /// No `neff.json`: the KELF descriptor was found by its conventional name.
    KelfFallback,
    /// A member appears twice in the tar; the later one wins.
    DuplicateMember,
    /// A payload nothing references; its staging region was released.
    Unreferenced,
    /// A KELF that `neff.json` does not name was ignored.
    KelfNotNamed,
}

impl ChainWarning {
    /// A stable number for this warning within its layer, for bindings (C, Python): fixed
    /// once given, never reused ([`WarningKind::code`](crate::WarningKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            ChainWarning::GraphCount { .. } => 1,
            ChainWarning::InstrNotMultipleOf64 { .. } => 2,
            ChainWarning::KelfFallback => 3,
            ChainWarning::DuplicateMember => 4,
            ChainWarning::Unreferenced => 5,
            ChainWarning::KelfNotNamed => 6,
        }
    }
}

impl fmt::Display for ChainWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainWarning::GraphCount { graphs, lnc_size } => {
                write!(f, "the KELF has {graphs} graphs but the header's lnc_size is {lnc_size}")
            }
            ChainWarning::InstrNotMultipleOf64 { size } => {
                write!(f, "instruction stream of {size} bytes is not a multiple of 64")
            }
            ChainWarning::KelfFallback => {
                f.write_str("no neff.json: using the KELF descriptor by its conventional name")
            }
            ChainWarning::DuplicateMember => f.write_str("member appears twice in the archive; the later one wins"),
            ChainWarning::Unreferenced => f.write_str("payload is not referenced by any manifest; released"),
            ChainWarning::KelfNotNamed => f.write_str("KELF descriptor not named by neff.json; ignored"),
        }
    }
}

/// What a manifest member is, by the key that names it (or, read before that, by its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestKind {
    /// Tier 1, `neff.json`.
    Neff,
    /// Tier 2, a KELF descriptor (`attrs.kelf` names it).
    Kelf,
    /// Tier 3, a subgraph definition (`graphs[].definition` names it).
    Def,
    /// An engine JSON or an activation set JSON (a `def.json` engine key or an activation
    /// engine's `activation_function_sets` names it).
    Engine,
}

impl ManifestKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            ManifestKind::Neff => 1,
            ManifestKind::Kelf => 2,
            ManifestKind::Def => 3,
            ManifestKind::Engine => 4,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(ManifestKind::Neff),
            2 => Some(ManifestKind::Kelf),
            3 => Some(ManifestKind::Def),
            4 => Some(ManifestKind::Engine),
            _ => None,
        }
    }

    /// The stage of errors in a manifest of this kind.
    pub const fn stage(self) -> super::Stage {
        match self {
            ManifestKind::Neff => super::Stage::NeffJson,
            ManifestKind::Kelf => super::Stage::Kelf,
            ManifestKind::Def => super::Stage::DefJson,
            ManifestKind::Engine => super::Stage::Engine,
        }
    }

    /// As printed.
    pub const fn as_str(self) -> &'static str {
        match self {
            ManifestKind::Neff => "neff.json",
            ManifestKind::Kelf => "KELF descriptor",
            ManifestKind::Def => "subgraph definition",
            ManifestKind::Engine => "engine JSON",
        }
    }
}
