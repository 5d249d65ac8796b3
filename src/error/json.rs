//! What the JSON tokenizer refuses: syntax error kinds ([`JsonError`]), what it was looking
//! for ([`Expected`]) and the kinds of tokens ([`TokenKind`]).

use core::fmt;

neff_macros::refusals!("schema/errors.toml", Json);
neff_macros::refusal_messages!("schema/errors.toml", Json);

/// What the tokenizer was looking for when it met something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Expected {
    /// Any JSON value (top level, after `:` or after `,` in an array).
    Value,
    /// An array element or the `]` of an empty array.
    ValueOrEndArray,
    /// A string key (after `,` in an object).
    Key,
    /// A string key or the `}` of an empty object.
    KeyOrEndObject,
    /// The `:` between a key and its value.
    Colon,
    /// `,` or `}` after an object member.
    CommaOrEndObject,
    /// `,` or `]` after an array element.
    CommaOrEndArray,
    /// The rest of the literal `true`.
    True,
    /// The rest of the literal `false`.
    False,
    /// The rest of the literal `null`.
    Null,
    /// An object (`{`), asked for by [`Tokenizer::begin_object`](crate::json::Tokenizer::begin_object).
    Object,
    /// An array (`[`), asked for by [`Tokenizer::begin_array`](crate::json::Tokenizer::begin_array).
    Array,
    /// A string value ([`Tokenizer::read_str`](crate::json::Tokenizer::read_str)).
    String,
    /// A non-negative integer ([`Tokenizer::read_u64`](crate::json::Tokenizer::read_u64)).
    UnsignedInteger,
    /// An integer ([`Tokenizer::read_i64`](crate::json::Tokenizer::read_i64)).
    Integer,
    /// Any number ([`Tokenizer::read_f64`](crate::json::Tokenizer::read_f64)).
    Number,
    /// `true` or `false` ([`Tokenizer::read_bool`](crate::json::Tokenizer::read_bool)).
    Bool,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Value => "a value",
            Expected::ValueOrEndArray => "a value or ']'",
            Expected::Key => "a string key",
            Expected::KeyOrEndObject => "a string key or '}'",
            Expected::Colon => "':' after key",
            Expected::CommaOrEndObject => "',' or '}' after object member",
            Expected::CommaOrEndArray => "',' or ']' after array element",
            Expected::True => "'true'",
            Expected::False => "'false'",
            Expected::Null => "'null'",
            Expected::Object => "an object",
            Expected::Array => "an array",
            Expected::String => "a string",
            Expected::UnsignedInteger => "an unsigned integer",
            Expected::Integer => "an integer",
            Expected::Number => "a number",
            Expected::Bool => "a boolean",
        })
    }
}

/// The kind of the next token, as [`Tokenizer::peek_kind`](crate::json::Tokenizer::peek_kind)
/// reports it without consuming anything. One per [`Event`](crate::json::Event) variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TokenKind {
    /// `{`
    BeginObject,
    /// `}`
    EndObject,
    /// `[`
    BeginArray,
    /// `]`
    EndArray,
    /// A member's key.
    Key,
    /// A string value.
    Str,
    /// A number.
    Num,
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
    /// The end of the document, after the top-level value.
    End,
}

impl TokenKind {
    /// A short name for messages: `"object"`, `"string"`, `"number"`, ...
    pub const fn name(self) -> &'static str {
        match self {
            TokenKind::BeginObject => "object",
            TokenKind::EndObject => "'}'",
            TokenKind::BeginArray => "array",
            TokenKind::EndArray => "']'",
            TokenKind::Key => "key",
            TokenKind::Str => "string",
            TokenKind::Num => "number",
            TokenKind::Bool => "boolean",
            TokenKind::Null => "null",
            TokenKind::End => "end of input",
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
