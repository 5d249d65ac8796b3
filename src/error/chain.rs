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

neff_macros::kinds!("schema/kinds.toml", ManifestKind);
