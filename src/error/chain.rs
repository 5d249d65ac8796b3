//! Errors and warnings of the chain checks (what the manifests name against what the tar
//! holds), and the kinds of manifest the chain names.

use super::Text;

neff_macros::refusals!("schema/errors.toml", Chain);
neff_macros::refusal_messages!("schema/errors.toml", Chain);

/// Short text for member names in chain errors (context: a longer name keeps its tail).
pub type MemberText = Text<40>;

/// Shorter text, where a variant carries a number beside it (so that `ErrorKind`, which every
/// `Result` of the core carries, does not grow).
pub type ShortText = Text<24>;

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
