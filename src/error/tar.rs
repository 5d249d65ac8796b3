//! What the tar walker refuses and notices.

neff_macros::refusals!("schema/errors.toml", Tar);
neff_macros::refusal_messages!("schema/errors.toml", Tar);
