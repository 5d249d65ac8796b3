//! What a device behind the `Hal` refuses.

use core::fmt;

neff_macros::refusals!("schema/errors.toml", Hal);
neff_macros::refusal_messages!("schema/errors.toml", Hal);

/// Handle to one device region, issued by a [`Hal`](crate::hal::Hal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionId(pub u32);

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}
