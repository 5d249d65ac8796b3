//! What the JSON tokenizer refuses: syntax error kinds ([`JsonError`]), what it was looking
//! for ([`Expected`]), the kinds of tokens ([`TokenKind`]) and the value types that type errors
//! name ([`JsonType`]).

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
    /// A value of this type, asked for by a typed read
    /// ([`Tokenizer::begin_object`](crate::json::Tokenizer::begin_object),
    /// [`Tokenizer::read_u64`](crate::json::Tokenizer::read_u64), ...).
    Type(JsonType),
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
            Expected::Type(t) => t.with_article(),
        })
    }
}

neff_macros::kinds!("schema/kinds.toml", TokenKind);
neff_macros::kinds!("schema/kinds.toml", JsonType);
