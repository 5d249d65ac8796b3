//! The discriminator enums of `schema/` (the device architecture, usage classes, dtypes, DMA
//! and engine kinds, ...): the words the layers share. Generated from the same TOML as the
//! manifest readers, but alone, so this module names nothing of the crate and any layer may
//! use it: the device's [`Hal`](crate::hal::Hal) speaks of an [`Arch`] and a [`UsageClass`]
//! without reaching into the manifest tier. `neff::manifest` re-exports every item.

neff_macros::schema_enums!("schema");
