//! Tier 2, `kelf-<i>.json`: the KELF descriptor.
//!
//! # Wire format
//!
//! `{"version": "0.5", "target": "cayman", "graphs": [{"name": "sg00", "definition":
//! "sg00/def.json"}, ...]}`. `version` is `MAJOR.MINOR[-suffix]`: the runtime splits it at the
//! first `.` (none is `invalid string (.) in %s`) and never gates on it. `target` names the
//! compile architecture (`sunda`/`v2`, `cayman`/`v3`, `mariana`/`v4`, `""` = SUNDA, `*` = any);
//! anything else is `Invalid target '%s'`. One graph per physical core of the logical core.

use embedded_io::BufRead;

use super::{semantic, Arch, Document, Kelf, ManifestError, Visitor};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

/// What a KELF `target` asks of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KelfTarget {
    /// A specific architecture.
    Arch(Arch),
    /// `*`: whatever device is present.
    Any,
}

/// `target` value meaning any architecture.
const ANY_TARGET: &str = "*";

/// `MAJOR.MINOR[-suffix]` split as the runtime does; `None` without a `.` or numbers.
pub fn parse_version(v: &str) -> Option<(u16, u16, &str)> {
    // Byte scans and checked cuts: `split_once('.')` links a char searcher with a bounds check
    // that LLVM keeps at `opt-level = "z"` (a panic path in the firmware image).
    let dot = v.bytes().position(|b| b == b'.')?;
    let (major, dot_rest) = v.split_at_checked(dot)?;
    let rest = dot_rest.get(1..)?;
    let digits = rest.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
    let (minor, suffix) = rest.split_at_checked(digits)?;
    let major = major.parse().ok()?;
    let minor = minor.parse().ok()?;
    Some((major, minor, suffix.strip_prefix('-').unwrap_or(suffix)))
}

impl Kelf {
    /// `(major, minor, suffix)` of `version` (`(0, 5, "")` for `"0.5"`).
    pub fn version_parts(&self) -> Option<(u16, u16, &str)> {
        parse_version(&self.version)
    }

    /// The target: an architecture, or any. An absent `target` reads as `""` (SUNDA).
    pub fn target_kind(&self) -> Result<KelfTarget, ManifestError> {
        let t = self.target.as_deref().unwrap_or("");
        if t == ANY_TARGET {
            return Ok(KelfTarget::Any);
        }
        Arch::from_json(t).map(KelfTarget::Arch).ok_or(ManifestError::InvalidTarget(Text::new(t)))
    }

    /// The architecture value as `neff info` prints it: `None` for `*` (and unknown targets).
    pub fn arch_value(&self) -> Option<Arch> {
        match self.target_kind() {
            Ok(KelfTarget::Arch(a)) => Some(a),
            _ => None,
        }
    }

    /// The device gate: a NEFF for another architecture is refused unless `allow_legacy`
    /// (`NEURON_RT_ALLOW_LEGACY_NEFF=1`) is set and the NEFF's architecture is older.
    pub fn check_device(&self, device: Arch, allow_legacy: bool) -> Result<(), ManifestError> {
        match self.target_kind()? {
            KelfTarget::Any => Ok(()),
            KelfTarget::Arch(a) if a == device => Ok(()),
            KelfTarget::Arch(a) if allow_legacy && a.value() < device.value() => Ok(()),
            KelfTarget::Arch(a) => Err(ManifestError::ArchMismatch { neff: a.value(), device: device.value() }),
        }
    }
}

impl Document for Kelf {
    /// The number of graphs.
    type Facts = u64;

    fn parse_into<R: BufRead>(
        &mut self,
        tok: &mut Tokenizer<'_>,
        src: &mut R,
        member: &str,
        _sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<u64, Error> {
        self.read_document(tok, src, member, visitor)?;
        let end = tok.offset();
        if parse_version(&self.version).is_none() {
            return Err(semantic(
                Stage::Kelf,
                member,
                end,
                Self::KEY_VERSION,
                ManifestError::InvalidVersion(Text::new(&self.version)),
            ));
        }
        self.target_kind().map_err(|e| semantic(Stage::Kelf, member, end, Self::KEY_TARGET, e))?;
        Ok(self.graphs.count)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_split_at_the_first_dot() {
        assert_eq!(parse_version("0.5"), Some((0, 5, "")));
        assert_eq!(parse_version("0.6-"), Some((0, 6, "")));
        assert_eq!(parse_version("0.1-bcfd4f2"), Some((0, 1, "bcfd4f2")));
        assert_eq!(parse_version("05"), None);
        assert_eq!(parse_version("x.1"), None);
    }
}
