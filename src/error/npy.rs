//! What a `.npy` payload's header refuses.

use super::{CapacityError, Text};

neff_macros::refusals!("schema/errors.toml", Npy);
neff_macros::refusal_messages!("schema/errors.toml", Npy);
