//! What the gzip wrapper and the deflate stream refuse and notice.

neff_macros::refusals!("schema/errors.toml", Gzip);
neff_macros::refusal_messages!("schema/errors.toml", Gzip);
