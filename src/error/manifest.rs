//! What a manifest refuses and notices once it is valid JSON: the runtime's rules per key,
//! with its wording (docs/format.md §12A), and the JSON types named in type errors.

use super::Text;

neff_macros::refusals!("schema/errors.toml", Manifest);

/// JSON value types, as named in type errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JsonType {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A non-negative integer.
    UnsignedInteger,
    /// An integer that may be negative.
    Integer,
    /// Any number (with a fraction or an exponent when found).
    Number,
    /// `true` / `false`.
    Bool,
    /// `null`.
    Null,
    /// The end of the document.
    Nothing,
}

impl JsonType {
    /// The name with its article, as expected: `an unsigned integer`.
    pub const fn with_article(self) -> &'static str {
        match self {
            JsonType::Object => "an object",
            JsonType::Array => "an array",
            JsonType::String => "a string",
            JsonType::UnsignedInteger => "an unsigned integer",
            JsonType::Integer => "an integer",
            JsonType::Number => "a number",
            JsonType::Bool => "a bool",
            JsonType::Null => "null",
            JsonType::Nothing => "nothing",
        }
    }

    /// The bare name, as found: `string`.
    pub const fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::UnsignedInteger => "unsigned integer",
            JsonType::Integer => "negative integer",
            JsonType::Number => "fractional number",
            JsonType::Bool => "bool",
            JsonType::Null => "null",
            JsonType::Nothing => "end of input",
        }
    }
}

/// Short context strings kept in errors and warnings (the tail of longer ones). Small on
/// purpose: every `Error`, and the tokenizer's stored fault, holds a `ManifestError`.
pub type Name = Text<16>;

/// A required key and the runtime's message when it is absent (empty: none).
#[derive(Debug, PartialEq, Eq)]
pub struct RequiredKey {
    /// The key.
    pub key: &'static str,
    /// The runtime's message, or empty.
    pub message: &'static str,
}

#[cfg(feature = "defmt")]
impl defmt::Format for RequiredKey {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.key)
    }
}

/// Which kind of queue `queue_instances` is refused on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueKind {
    /// `in`
    Input,
    /// `out`
    Output,
    /// `embedding_update`
    EmbeddingUpdate,
}

impl QueueKind {
    /// As the runtime writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            QueueKind::Input => "input",
            QueueKind::Output => "output",
            QueueKind::EmbeddingUpdate => "embedding update",
        }
    }
}
