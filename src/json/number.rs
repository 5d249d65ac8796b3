//! [`Number`]: the validated text of a JSON number and its exact conversions.
//!
//! The tokenizer has already checked the RFC 8259 grammar
//! (`-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`), so the conversions here only
//! decide whether the value fits the type asked for.

use super::JsonError;

/// The validated text of a JSON number, as received from [`Event::Num`](super::Event::Num).
///
/// Integer conversions are exact: a fraction or an exponent is [`JsonError::NotAnInteger`]
/// (even `1.0` and `1e2`), a value outside the type is [`JsonError::NumberOutOfRange`].
/// `-0` is the integer zero for both [`Number::as_u64`] and [`Number::as_i64`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Number<'a> {
    text: &'a str,
    integer: bool,
}

impl<'a> Number<'a> {
    /// Wraps number text the tokenizer has validated; `integer` is true when it has neither a
    /// fraction nor an exponent.
    pub(crate) const fn new(text: &'a str, integer: bool) -> Self {
        Self { text, integer }
    }

    /// The number exactly as written in the document.
    pub fn text(&self) -> &'a str {
        self.text
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
        match self.text.as_bytes().split_first() {
            // The grammar allows no leading zeros, so "-0" is the only negative zero.
            Some((b'-', digits)) => match digits {
                b"0" => Ok(0),
                _ => Err(JsonError::NumberOutOfRange),
            },
            _ => accumulate(self.text.as_bytes(), |acc: u64, d| acc.checked_mul(10)?.checked_add(d)),
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
        match self.text.as_bytes().split_first() {
            // Accumulating downwards reaches i64::MIN, which has no positive counterpart.
            Some((b'-', digits)) => {
                accumulate(digits, |acc: i64, d| acc.checked_mul(10)?.checked_sub(i64::try_from(d).ok()?))
            }
            _ => {
                accumulate(self.text.as_bytes(), |acc: i64, d| acc.checked_mul(10)?.checked_add(i64::try_from(d).ok()?))
            }
        }
    }

    /// The value as the nearest `f64` (core's correctly rounded parse).
    ///
    /// [`JsonError::NumberOutOfRange`] when the magnitude is too large for a finite `f64`
    /// (`1e400`); values too small round to zero, as in every JSON parser.
    pub fn as_f64(&self) -> Result<f64, JsonError> {
        let value: f64 = self.text.parse().map_err(|_| JsonError::InvalidNumber)?;
        if value.is_finite() {
            Ok(value)
        } else {
            Err(JsonError::NumberOutOfRange)
        }
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

    fn int(text: &str) -> Number<'_> {
        Number::new(text, true)
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
            let n = Number::new(text, false);
            assert_eq!(n.as_u64(), Err(JsonError::NotAnInteger), "{text}");
            assert_eq!(n.as_i64(), Err(JsonError::NotAnInteger), "{text}");
            assert!(n.as_f64().is_ok(), "{text}");
        }
    }

    #[test]
    fn f64_parses_every_shape_and_rejects_infinity() {
        assert_eq!(Number::new("0.5e-3", false).as_f64(), Ok(0.0005));
        assert_eq!(Number::new("1E+2", false).as_f64(), Ok(100.0));
        assert_eq!(int("-0").as_f64().map(f64::is_sign_negative), Ok(true));
        assert_eq!(int("18446744073709551616").as_f64(), Ok(18446744073709551616.0));
        assert_eq!(Number::new("1e400", false).as_f64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(Number::new("-1e400", false).as_f64(), Err(JsonError::NumberOutOfRange));
        assert_eq!(Number::new("1e-400", false).as_f64(), Ok(0.0));
    }
}
