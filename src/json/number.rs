//! [`Number`]: the validated text of a JSON number and its exact conversions.
//!
//! The tokenizer has already checked the RFC 8259 grammar
//! (`-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`), so the conversions here only
//! decide whether the value fits the type asked for.

use super::{JsonError, NUMBER_CAPACITY};

/// The validated text of a JSON number, as received from [`Event::Num`](super::Event::Num).
///
/// Integer conversions are exact: a fraction or an exponent is [`JsonError::NotAnInteger`]
/// (even `1.0` and `1e2`), a value outside the type is [`JsonError::NumberOutOfRange`].
/// `-0` is the integer zero for both [`Number::as_u64`] and [`Number::as_i64`].
///
/// The text is kept as the bytes the tokenizer checked (ASCII by the grammar): a reader that
/// converts the number never pays for a `str` check of it; [`Number::text`] makes one.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Number<'a> {
    text: &'a [u8],
    integer: bool,
}

impl<'a> Number<'a> {
    /// Wraps number text the tokenizer has validated (its grammar admits ASCII alone);
    /// `integer` is true when it has neither a fraction nor an exponent.
    pub(crate) const fn from_ascii(text: &'a [u8], integer: bool) -> Self {
        Self { text, integer }
    }

    /// The number exactly as written in the document.
    pub fn text(&self) -> &'a str {
        // ASCII by the grammar the tokenizer checked: the check never fails.
        core::str::from_utf8(self.text).unwrap_or("")
    }

    /// The number's text as bytes (ASCII), without [`Number::text`]'s check.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    /// True when the text starts with `-` (a negative number, or `-0`).
    pub fn is_negative(&self) -> bool {
        self.text.first() == Some(&b'-')
    }

    /// True when the number has neither a fraction nor an exponent.
    pub fn is_integer(&self) -> bool {
        self.integer
    }

    /// The value as a `u64`.
    ///
    /// [`JsonError::NotAnInteger`] for a fraction or an exponent; [`JsonError::NumberOutOfRange`]
    /// above `u64::MAX` and for a negative integer (other than `-0`, which is 0).
    pub fn as_u64(&self) -> Result<u64, JsonError> {
        if !self.integer {
            return Err(JsonError::NotAnInteger);
        }
        match self.text.split_first() {
            // The grammar allows no leading zeros, so "-0" is the only negative zero.
            Some((b'-', digits)) => match digits {
                b"0" => Ok(0),
                _ => Err(JsonError::NumberOutOfRange),
            },
            _ => accumulate(self.text, |acc: u64, d| acc.checked_mul(10)?.checked_add(d)),
        }
    }

    /// The value as an `i64`.
    ///
    /// [`JsonError::NotAnInteger`] for a fraction or an exponent; [`JsonError::NumberOutOfRange`]
    /// outside `i64::MIN..=i64::MAX`.
    pub fn as_i64(&self) -> Result<i64, JsonError> {
        if !self.integer {
            return Err(JsonError::NotAnInteger);
        }
        match self.text.split_first() {
            // Accumulating downwards reaches i64::MIN, which has no positive counterpart.
            Some((b'-', digits)) => {
                accumulate(digits, |acc: i64, d| acc.checked_mul(10)?.checked_sub(i64::try_from(d).ok()?))
            }
            _ => accumulate(self.text, |acc: i64, d| acc.checked_mul(10)?.checked_add(i64::try_from(d).ok()?)),
        }
    }

    /// The value as the nearest `f64` (core's correctly rounded parse).
    ///
    /// [`JsonError::NumberOutOfRange`] when the magnitude is too large for a finite `f64`
    /// (`1e400`); values too small round to zero, as in every JSON parser.
    pub fn as_f64(&self) -> Result<f64, JsonError> {
        let value: f64 = self.text().parse().map_err(|_| JsonError::InvalidNumber)?;
        if value.is_finite() {
            Ok(value)
        } else {
            Err(JsonError::NumberOutOfRange)
        }
    }
}

// By hand: the text as a string, as when it was held as one.
impl core::fmt::Debug for Number<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Number").field("text", &self.text()).field("integer", &self.integer).finish()
    }
}

impl Number<'_> {
    /// True when the value is a finite `f64` ([`Number::as_f64`] succeeds), decided from the
    /// digits alone, without parsing a float.
    pub fn fits_f64(&self) -> bool {
        fits_f64(self.text)
    }
}

/// The first digits of the smallest magnitude that rounds to infinity, `(2^54 - 1) * 2^970`
/// (halfway between `f64::MAX` and `2^1024`; a tie rounds to even, the infinite side), a
/// 309-digit integer. More than a kept number can have ([`NUMBER_CAPACITY`] bytes), and its
/// later digits are not all zero, so a number that matches all of these is below it.
const OVERFLOW_DIGITS: &[u8] = b"17976931348623158079372897140530341507993413271003782693617377898044";
/// Digits before the point of that magnitude.
const OVERFLOW_DIGITS_BEFORE_POINT: i64 = 309;

/// True when the JSON number `text` (valid grammar) rounds to a finite `f64`: below
/// `(2^54 - 1) * 2^970` in magnitude. As `0.DIGITS × 10^e` with a first digit that is not
/// zero, that is `e` below 309, or `e` equal to it and the digits below the bound's.
fn fits_f64(text: &[u8]) -> bool {
    use core::cmp::Ordering;
    let mut e: i64 = 0;
    let mut significant = false; // a digit other than a leading zero was seen
    let mut fraction = false;
    let mut order = Ordering::Equal; // the digits against the bound's, first difference
    let mut bound = OVERFLOW_DIGITS.iter();
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match b {
            // A leading zero: only after the point does it move the point.
            b'0' if !significant && fraction => e = e.saturating_sub(1),
            b'0' if !significant => {}
            b'0'..=b'9' => {
                significant = true;
                if !fraction {
                    e = e.saturating_add(1);
                }
                if order == Ordering::Equal {
                    // The bound has more digits than a kept number.
                    order = b.cmp(bound.next().unwrap_or(&b'0'));
                }
            }
            b'.' => fraction = true,
            b'e' | b'E' => break,
            _ => {} // the sign
        }
    }
    if !significant {
        return true; // zero
    }
    match e.saturating_add(exponent_of(rest)).cmp(&OVERFLOW_DIGITS_BEFORE_POINT) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => order != Ordering::Greater,
    }
}

/// An exponent's value (`+12`, `-3`, `400`), its magnitude capped at a million: a number has at
/// most [`NUMBER_CAPACITY`] digits, so past that only the sign matters.
fn exponent_of(text: &[u8]) -> i64 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let magnitude = digits
        .iter()
        .fold(0i64, |acc, &d| acc.saturating_mul(10).saturating_add(i64::from(d.wrapping_sub(b'0'))).min(1_000_000));
    if negative {
        magnitude.saturating_neg()
    } else {
        magnitude
    }
}

/// A JSON number read for a key the schema types `f64`: kept as its text, which was checked to
/// round to a finite `f64`; [`Float::value`] parses it (core's correctly rounded parse) when
/// asked. A reader that only validates, as the firmware does, links no float parser.
///
/// `Debug` shows the value as an `f64` does (`0.5`, `1.0`); two are equal when their values
/// are.
#[derive(Clone, Copy)]
pub struct Float {
    text: [u8; NUMBER_CAPACITY],
    len: u8,
}

impl Float {
    /// The number `text` (a schema default: JSON number text, cut at [`NUMBER_CAPACITY`]
    /// bytes, which no default reaches).
    pub fn literal(text: &str) -> Self {
        let mut out = [0u8; NUMBER_CAPACITY];
        let n = text.len().min(NUMBER_CAPACITY);
        if let (Some(dst), Some(from)) = (out.get_mut(..n), text.as_bytes().get(..n)) {
            dst.copy_from_slice(from);
        }
        Self { text: out, len: u8::try_from(n).unwrap_or(0) }
    }

    /// The number `n` as read: [`JsonError::NumberOutOfRange`] when it does not round to a
    /// finite `f64` (as [`Number::as_f64`]). The tokenizer hands out numbers of at most
    /// [`NUMBER_CAPACITY`] bytes; a longer text, which it never gives, is refused the same way
    /// rather than cut.
    pub fn from_number(n: &Number<'_>) -> Result<Self, JsonError> {
        if n.fits_f64() && n.as_bytes().len() <= NUMBER_CAPACITY {
            Ok(Self::literal(n.text()))
        } else {
            Err(JsonError::NumberOutOfRange)
        }
    }

    /// The number as written.
    pub fn text(&self) -> &str {
        let bytes = self.text.get(..usize::from(self.len)).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or("0")
    }

    /// The value (the text was checked when read, so it always parses to a finite `f64`).
    pub fn value(&self) -> f64 {
        self.text().parse().unwrap_or(0.0)
    }
}

impl Default for Float {
    /// Zero, the default of an `f64`.
    fn default() -> Self {
        Self::literal("0")
    }
}

impl PartialEq for Float {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl core::fmt::Debug for Float {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.value(), f)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Float {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.text())
    }
}

/// Folds ASCII digits with `step`, which returns `None` on overflow.
fn accumulate<T: Default>(digits: &[u8], step: impl Fn(T, u64) -> Option<T>) -> Result<T, JsonError> {
    digits.iter().try_fold(T::default(), |acc, &b| {
        if !b.is_ascii_digit() {
            return Err(JsonError::InvalidNumber);
        }
        // `b` is a digit: the subtraction cannot wrap.
        step(acc, u64::from(b.wrapping_sub(b'0'))).ok_or(JsonError::NumberOutOfRange)
    })
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
    extern crate std;

    fn int(text: &str) -> Number<'_> {
        Number::from_ascii(text.as_bytes(), true)
    }

    #[test]
    fn u64_is_exact_up_to_its_maximum() {
        assert_eq!(int("0").as_u64(), Ok(0));
        assert_eq!(int("-0").as_u64(), Ok(0));
        assert_eq!(int("18446744073709551615").as_u64(), Ok(u64::MAX));
        assert_eq!(int("18446744073709551616").as_u64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(int("99999999999999999999").as_u64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(int("-1").as_u64(), Err(JsonError::NumberOutOfRange));
    }

    #[test]
    fn i64_reaches_both_extremes() {
        assert_eq!(int("9223372036854775807").as_i64(), Ok(i64::MAX));
        assert_eq!(int("9223372036854775808").as_i64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(int("-9223372036854775808").as_i64(), Ok(i64::MIN));
        assert_eq!(int("-9223372036854775809").as_i64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(int("-0").as_i64(), Ok(0));
        assert_eq!(int("-42").as_i64(), Ok(-42));
    }

    #[test]
    fn fractions_and_exponents_are_not_integers() {
        for text in ["1.0", "1e2", "-0.5", "0E0"] {
            let n = Number::from_ascii(text.as_bytes(), false);
            assert_eq!(n.as_u64(), Err(JsonError::NotAnInteger), "{text}");
            assert_eq!(n.as_i64(), Err(JsonError::NotAnInteger), "{text}");
            assert!(n.as_f64().is_ok(), "{text}");
        }
    }

    #[test]
    fn fits_f64_agrees_with_the_float_parser() {
        let bound = "179769313486231580793728971405303415079934132710037826936173778980";
        let mut cases: std::vec::Vec<std::string::String> = std::vec::Vec::new();
        for text in [
            "0",
            "-0",
            "0.0",
            "0e999999999999999999999",
            "1",
            "1e308",
            "1e309",
            "-1e309",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "17976931348623158e292",
            "0.00017976931348623158e312",
            "1e-400",
            "123.456e-2",
            "1E+2",
            "9e307",
            "99e307",
            "1e+0308",
            "0.1e310",
            "10e307",
            "1e99999999999999999999",
        ] {
            cases.push(text.into());
        }
        // Around the bound: its own digits, and one digit more or less at each position.
        for n in 1..bound.len() {
            let (head, _) = bound.split_at(n);
            for tail in ["", "0", "1", "9", "0000001", "99999"] {
                for exp in [308 - (n as i32) + 1, 309 - (n as i32) + 1, 307 - (n as i32) + 1] {
                    cases.push(std::format!("{head}{tail}e{exp}"));
                    cases.push(std::format!("0.{head}{tail}e{}", exp + n as i32 + tail.len() as i32));
                }
                let mut bumped: std::vec::Vec<u8> = head.bytes().collect();
                if let Some(last) = bumped.last_mut() {
                    *last = if *last == b'9' { b'0' } else { *last + 1 };
                }
                let bumped = std::string::String::from_utf8(bumped).unwrap();
                cases.push(std::format!("{bumped}{tail}e{}", 309 - n as i32));
            }
        }
        for text in &cases {
            let integer = !text.contains(['.', 'e', 'E']);
            let n = Number::from_ascii(text.as_bytes(), integer);
            let parsed: f64 = text.parse().unwrap();
            assert_eq!(n.fits_f64(), parsed.is_finite(), "{text}");
            if text.len() <= NUMBER_CAPACITY {
                let float = Float::from_number(&n);
                assert_eq!(float.map(|f| f.value()).ok(), parsed.is_finite().then_some(parsed), "{text}");
            }
        }
    }

    #[test]
    fn a_float_shows_and_compares_as_its_value() {
        let f = Float::literal("1e0");
        assert_eq!(std::format!("{f:?}"), "1.0");
        assert_eq!(f, Float::literal("1.00"));
        assert_eq!(std::format!("{:?}", Float::default()), "0.0");
        assert_eq!(
            Float::from_number(&Number::from_ascii("1e400".as_bytes(), false)).err(),
            Some(JsonError::NumberOutOfRange)
        );
    }

    #[test]
    fn f64_parses_every_shape_and_rejects_infinity() {
        assert_eq!(Number::from_ascii("0.5e-3".as_bytes(), false).as_f64(), Ok(0.0005));
        assert_eq!(Number::from_ascii("1E+2".as_bytes(), false).as_f64(), Ok(100.0));
        assert_eq!(int("-0").as_f64().map(f64::is_sign_negative), Ok(true));
        assert_eq!(int("18446744073709551616").as_f64(), Ok(18446744073709551616.0));
        assert_eq!(Number::from_ascii("1e400".as_bytes(), false).as_f64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(Number::from_ascii("-1e400".as_bytes(), false).as_f64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(Number::from_ascii("1e-400".as_bytes(), false).as_f64(), Ok(0.0));
    }
}
