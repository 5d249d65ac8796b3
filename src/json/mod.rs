//! A streaming, non-recursive JSON pull tokenizer for the manifests (RFC 8259).
//!
//! # Wire format
//!
//! A manifest is one RFC 8259 JSON text: whitespace (space, tab, CR, LF), one value, whitespace.
//! Values are objects `{"key": value, ...}`, arrays `[value, ...]`, strings (UTF-8 between `"`,
//! bytes below 0x20 escaped; escapes `\" \\ \/ \b \f \n \r \t \uXXXX`, astral characters as a
//! UTF-16 surrogate pair `\uD83D\uDE00`), numbers
//! (`-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`), `true`, `false` and `null`.
//!
//! The [`Tokenizer`] pulls the text from an [`embedded_io::BufRead`] in whatever chunks the
//! source gives (one byte at a time works: a token may straddle any number of chunks) and
//! validates all of it, including the values nobody asks for: no trailing commas, no leading
//! zeros, no lone surrogates, no invalid UTF-8 (overlong forms, encoded surrogates, truncated
//! sequences), nothing but whitespace after the top-level value. Every failure is a [`Fault`]
//! with the byte offset from the start of the document.
//!
//! It holds no heap and never recurses: containers are tracked by a depth counter and a bit
//! stack, bounded by the depth limit the caller sets (at most [`MAX_DEPTH`];
//! [`JsonError::DepthLimit`]), so even a value nested 100,000 levels deep inside a skipped key
//! ends in an error, not a stack overflow. Strings and keys the caller receives are unescaped
//! into a scratch buffer the caller lends, numbers into a [`NUMBER_CAPACITY`]-byte one of its
//! own; exceeding either is a capacity error (limits [`SCRATCH_LIMIT`], with the lent length,
//! and [`NUMBER_LIMIT`]), never a truncation. Skipped values may hold strings and numbers of
//! any length.
//!
//! # Protocol
//!
//! [`Tokenizer::next`] returns one [`Event`] per token: `BeginObject`, then `Key`, the value's
//! events, `Key`, ... `EndObject`; `BeginArray`, the elements' events, `EndArray`; and after the
//! top-level value, `End`. Separators never appear as events. A consumed-key parser uses the
//! helpers built on the same machinery:
//!
//! - an object: [`Tokenizer::begin_object`] (or `next` returning `BeginObject`), then
//!   `while let Some(key) = tok.next_key(src)? { ... }`: for each key, read its value (with
//!   `next`, or [`Tokenizer::peek_kind`] first to reject a wrong type before consuming) or
//!   [`Tokenizer::skip_value`] it. `next_key` returns `None` after consuming the `}`.
//! - an array: [`Tokenizer::begin_array`], then `while tok.next_element(src)? { ... }`: read or
//!   skip one element per turn. `next_element` returns `false` after consuming the `]`.
//! - a scalar: [`Tokenizer::read_str`], [`Tokenizer::read_u64`], [`Tokenizer::read_i64`],
//!   [`Tokenizer::read_f64`], [`Tokenizer::read_bool`] look at the token first and refuse
//!   another type with [`JsonError::UnexpectedToken`] at its offset, before consuming it
//!   ("expected an unsigned integer, found string (byte 42)").
//!   [`Tokenizer::position`] gives that offset after a [`Tokenizer::peek_kind`].
//! - the end: `next` returns [`Event::End`] once only whitespace is left; anything else is
//!   [`JsonError::TrailingData`].
//!
//! [`Tokenizer::skip_value`] skips exactly one value (at a key position: the key and its
//! value). When the next token is `]`, `}` or the end, it returns `Ok(false)` and consumes
//! nothing, so `while tok.skip_value(src)? {}` drains the rest of a container whose end the
//! next `next`/`next_key`/`next_element` call then consumes.
//!
//! Reading `a` and skipping `b`:
//!
//! ```
//! use neff::json::{Event, Fault, Tokenizer};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut src: &[u8] = br#"{"a":[1,2],"b":"x"}"#;
//! // Strings and keys up to 64 bytes, containers 8 deep.
//! let mut scratch = [0u8; 64];
//! let mut tok = Tokenizer::new(&mut scratch, 8);
//! let mut a = heapless::Vec::<u64, 4>::new();
//!
//! tok.begin_object(&mut src)?;
//! while let Some(key) = tok.next_key(&mut src)? {
//!     match key {
//!         "a" => {
//!             tok.begin_array(&mut src)?;
//!             while tok.next_element(&mut src)? {
//!                 a.push(tok.read_u64(&mut src)?).map_err(|_| "a: too many elements")?;
//!             }
//!         }
//!         _ => {
//!             tok.skip_value(&mut src)?;
//!         }
//!     }
//! }
//! assert_eq!(tok.next(&mut src)?, Event::End);
//! assert_eq!(a.as_slice(), &[1, 2]);
//!
//! // A wrong type is refused before it is consumed, at its offset.
//! tok.reset();
//! let mut wrong: &[u8] = br#"{"a": ["1"]}"#;
//! tok.begin_object(&mut wrong)?;
//! assert_eq!(tok.next_key(&mut wrong)?, Some("a"));
//! tok.begin_array(&mut wrong)?;
//! assert!(tok.next_element(&mut wrong)?);
//! let fault = tok.read_u64(&mut wrong).unwrap_err();
//! assert_eq!(fault.to_string(), "expected an unsigned integer, found string (byte 7)");
//!
//! // The same tokenizer, reset, reports where a bad document goes wrong.
//! tok.reset();
//! let mut bad: &[u8] = br#"{"a" 1}"#;
//! assert_eq!(tok.next(&mut bad)?, Event::BeginObject);
//! assert_eq!(tok.next(&mut bad)?, Event::Key("a"));
//! let fault: Fault = tok.next(&mut bad).unwrap_err();
//! assert_eq!(fault.offset, 5);
//! assert_eq!(fault.to_string(), "expected ':' after key, found '1' (byte 5)");
//! # Ok(())
//! # }
//! ```
//!
//! # Numbers
//!
//! [`Number`] keeps the validated text; [`Number::as_u64`] and [`Number::as_i64`] are exact
//! (`-0` is 0; a fraction or exponent is [`JsonError::NotAnInteger`]; overflow and, for `u64`,
//! a negative value are [`JsonError::NumberOutOfRange`]); [`Number::as_f64`] is core's correctly
//! rounded parse, with infinity refused.
//!
//! No arithmetic in this module can overflow on any input: every module denies
//! `clippy::arithmetic_side_effects` (see each module's note).
#![deny(clippy::arithmetic_side_effects)]

mod error;
mod number;
mod tokenizer;

pub use error::{Expected, Fault, JsonError, JsonType, TokenKind};
pub use number::{Float, Number};
#[cfg(not(target_os = "none"))]
pub(crate) use tokenizer::QuickMember;
pub use tokenizer::{Event, Tokenizer, MAX_DEPTH, NUMBER_CAPACITY, NUMBER_LIMIT, SCRATCH_LIMIT};

impl core::error::Error for JsonError {}
impl core::error::Error for Fault {}
