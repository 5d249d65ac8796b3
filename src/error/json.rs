//! What the JSON tokenizer refuses: syntax error kinds ([`JsonError`]), what it was looking
//! for ([`Expected`]) and the kinds of tokens ([`TokenKind`]).

use core::fmt;

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

/// Syntax-level errors: the document is not RFC 8259 JSON, or a number does not fit the type
/// asked for. Carried by [`ErrorKind::Json`](crate::ErrorKind::Json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JsonError {
    /// A byte that cannot start or continue what the grammar allows here.
    UnexpectedByte {
        /// The byte found.
        found: u8,
        /// What the grammar allows here.
        expected: Expected,
    },
    /// A well-formed token the caller's protocol does not allow here (for example
    /// [`Tokenizer::begin_object`](crate::json::Tokenizer::begin_object) meeting a string).
    UnexpectedToken {
        /// The token found (not consumed).
        found: TokenKind,
        /// What the caller asked for.
        expected: Expected,
    },
    /// The input ended inside the document (this includes an empty document).
    UnexpectedEnd,
    /// Containers nest deeper than the tokenizer's depth limit.
    DepthLimit {
        /// The tokenizer's depth limit (as applied, at most 256): the most containers open
        /// at once.
        limit: u16,
    },
    /// A `\` escape other than `\" \\ \/ \b \f \n \r \t \uXXXX`, or a `\u` without four hex digits.
    InvalidEscape,
    /// A `\u` escape of a UTF-16 surrogate that is not part of a high-low pair.
    LoneSurrogate,
    /// A string holds bytes that are not UTF-8 (overlong forms, surrogate code points,
    /// code points above U+10FFFF, truncated sequences, stray continuation bytes).
    InvalidUtf8,
    /// A raw byte below 0x20 inside a string (it must be escaped).
    ControlCharInString,
    /// A number that breaks the grammar: leading zero, `1.`, `1e`, `-` alone.
    InvalidNumber,
    /// A number outside the range of the type asked for (`u64`, `i64`, finite `f64`).
    NumberOutOfRange,
    /// A number with a fraction or an exponent where an integer is asked for.
    NotAnInteger,
    /// Something other than whitespace after the top-level value.
    TrailingData,
    /// A `,` directly before `]` or `}`.
    TrailingComma,
}

impl JsonError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            JsonError::UnexpectedByte { .. } => 1,
            JsonError::UnexpectedToken { .. } => 2,
            JsonError::UnexpectedEnd => 3,
            JsonError::DepthLimit { .. } => 4,
            JsonError::InvalidEscape => 5,
            JsonError::LoneSurrogate => 6,
            JsonError::InvalidUtf8 => 7,
            JsonError::ControlCharInString => 8,
            JsonError::InvalidNumber => 9,
            JsonError::NumberOutOfRange => 10,
            JsonError::NotAnInteger => 11,
            JsonError::TrailingData => 12,
            JsonError::TrailingComma => 13,
        }
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            JsonError::UnexpectedByte { found, expected } => {
                write!(f, "expected {expected}, found ")?;
                if found.is_ascii_graphic() {
                    write!(f, "'{}'", char::from(found))
                } else {
                    write!(f, "byte 0x{found:02X}")
                }
            }
            JsonError::UnexpectedToken { found, expected } => {
                write!(f, "expected {expected}, found {found}")
            }
            JsonError::UnexpectedEnd => f.write_str("unexpected end of JSON input"),
            JsonError::DepthLimit { limit } => write!(f, "JSON nested deeper than {limit} levels"),
            JsonError::InvalidEscape => f.write_str("invalid escape sequence in string"),
            JsonError::LoneSurrogate => f.write_str("unpaired UTF-16 surrogate in \\u escape"),
            JsonError::InvalidUtf8 => f.write_str("invalid UTF-8 in string"),
            JsonError::ControlCharInString => f.write_str("unescaped control character in string"),
            JsonError::InvalidNumber => f.write_str("invalid number"),
            JsonError::NumberOutOfRange => f.write_str("number out of range"),
            JsonError::NotAnInteger => f.write_str("number is not an integer"),
            JsonError::TrailingData => f.write_str("data after the top-level JSON value"),
            JsonError::TrailingComma => f.write_str("trailing comma"),
        }
    }
}
