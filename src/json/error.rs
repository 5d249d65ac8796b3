//! What the tokenizer reports: syntax error kinds ([`JsonError`]), what it was looking for
//! ([`Expected`]), the kinds of tokens ([`TokenKind`]) and a failure with its byte offset
//! ([`Fault`]).

use core::fmt;

use crate::error::{Error, ErrorKind, Stage};
pub use crate::error::{Expected, JsonError, JsonType, TokenKind};

/// A tokenizer failure: where it happened and why.
///
/// `kind` is [`ErrorKind::Json`] for bad JSON, [`ErrorKind::Io`] when the source failed and
/// [`ErrorKind::Capacity`] when a string or number the caller receives does not fit
/// (limits `"JSON string scratch"` and `"JSON number length"`). The end of input inside the
/// document is `Json(UnexpectedEnd)`; the tokenizer never reports [`ErrorKind::Truncated`]
/// itself (a short tar member is the tar layer's to report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fault {
    /// Bytes from the start of the document to the offending byte (for a capacity error: to the
    /// start of the token that did not fit).
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Fault {
    /// A JSON syntax fault at `offset`.
    pub const fn json(offset: u64, error: JsonError) -> Self {
        Self { offset, kind: ErrorKind::Json(error) }
    }

    /// The crate error for this fault inside `member` (offset counted from the member's body).
    pub fn into_error(self, stage: Stage, member: &str, key_path: &str) -> Error {
        Error::in_member(stage, member, self.offset, self.kind).with_key_path(key_path)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (byte {})", self.kind, self.offset)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::error::OffsetBase;

    fn text(value: impl fmt::Display) -> heapless::String<128> {
        let mut s = heapless::String::new();
        core::fmt::write(&mut s, format_args!("{value}")).ok();
        s
    }

    #[test]
    fn unexpected_byte_reads_like_a_sentence() {
        let e = JsonError::UnexpectedByte { found: b'x', expected: Expected::Colon };
        assert_eq!(text(e).as_str(), "expected ':' after key, found 'x'");
        let e = JsonError::UnexpectedByte { found: 0x07, expected: Expected::Value };
        assert_eq!(text(e).as_str(), "expected a value, found byte 0x07");
        let e = JsonError::UnexpectedToken { found: TokenKind::Str, expected: Expected::Type(JsonType::Object) };
        assert_eq!(text(e).as_str(), "expected an object, found string");
    }

    #[test]
    fn fault_becomes_an_error_in_a_member() {
        let fault = Fault::json(42, JsonError::TrailingComma);
        let err = fault.into_error(Stage::DefJson, "sg00/def.json", "var.x.size");
        assert_eq!(err.offset, 42);
        assert_eq!(err.offset_base, OffsetBase::Member);
        assert_eq!(err.member.as_str(), "sg00/def.json");
        assert_eq!(err.key_path.as_str(), "var.x.size");
        assert_eq!(err.kind, ErrorKind::Json(JsonError::TrailingComma));
        assert_eq!(text(err).as_str(), "sg00/def.json: var.x.size: trailing comma (byte 42)");
        assert_eq!(text(fault).as_str(), "trailing comma (byte 42)");
    }
}
