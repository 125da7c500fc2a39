//! Kubernetes resource quantities (`resource.Quantity` of apimachinery) as exact integers.
//!
//! A [`Quantity`] holds its value as a signed count of nano-units in an `i128` (apimachinery's
//! finest scale, so milli-unit and byte arithmetic are both exact) plus the [`Format`] it was
//! written in. Sums and differences (`+`, `-`), minima (`Ord::min`) and percentages
//! ([`Quantity::percent`]) are integer arithmetic, never floating point, and
//! [`Quantity::to_canonical_string`] prints apimachinery's canonical form (`1500m`, `3`,
//! `4608Mi`, `6Gi`, `100M`).
//!
//! Parsing follows apimachinery's `ParseQuantity`: values are rounded up (away from zero) to
//! the nearest nano-unit, binary values are capped at 2^63-1, and a binary value between 0
//! and 1 switches to the decimal format. Differences from apimachinery: a quantity must
//! contain at least one digit (apimachinery reads a bare suffix such as `Mi` as zero), and
//! at most 38 significant digits are accepted.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

/// Nano-units per unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Nano-units per milli-unit.
const NANOS_PER_MILLI: i128 = 1_000_000;
/// apimachinery caps binary quantities at this many units.
const MAX_BINARY_UNITS: i128 = i64::MAX as i128;
/// [`MAX_BINARY_UNITS`] in nano-units.
const MAX_BINARY_NANOS: i128 = MAX_BINARY_UNITS * NANOS_PER_UNIT;
/// More significant digits than this could overflow the `i128` arithmetic.
const MAX_DIGITS: usize = 38;

/// How a quantity was written, which decides how it is printed again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Decimal SI suffixes: `n u m "" k M G T P E`.
    DecimalSI,
    /// Binary SI suffixes: `Ki Mi Gi Ti Pi Ei`.
    BinarySI,
    /// Decimal exponents: `1e3`, `2E-6`.
    DecimalExponent,
}

/// Why a string is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is empty.
    #[error("quantity is empty")]
    Empty,
    /// The string is not `<sign><number><suffix>`.
    #[error("quantity {input:?} is not a number followed by an optional suffix")]
    Malformed {
        /// The rejected input.
        input: String,
    },
    /// The number is followed by an unknown suffix.
    #[error(
        "quantity {input:?} has unknown suffix {suffix:?} (expected one of n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent like e3)"
    )]
    UnknownSuffix {
        /// The rejected input.
        input: String,
        /// The suffix that was not recognised.
        suffix: String,
    },
    /// The value does not fit the supported range or precision.
    #[error("quantity {input:?} is out of the supported range")]
    OutOfRange {
        /// The rejected input.
        input: String,
    },
}

/// An exact Kubernetes resource quantity.
///
/// Equality, ordering and hashing look at the value only, not at the format: `1Ki` equals
/// `1024` (as `Quantity.Cmp` in apimachinery).
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl Quantity {
    /// The zero quantity (decimal format).
    pub const ZERO: Quantity = Quantity {
        nanos: 0,
        format: Format::DecimalSI,
    };

    /// Parses a quantity string such as `100m`, `1.5`, `4Gi` or `1e3`.
    pub fn parse(input: &str) -> Result<Quantity, QuantityError> {
        parse(input)
    }

    /// A quantity of `units` whole units (`from_units(3, DecimalSI)` is `3`).
    pub fn from_units(units: i128, format: Format) -> Quantity {
        Quantity {
            nanos: units.saturating_mul(NANOS_PER_UNIT),
            format,
        }
    }

    /// A quantity of `milli` thousandths of a unit (`from_milli(1500, DecimalSI)` is `1500m`).
    pub fn from_milli(milli: i128, format: Format) -> Quantity {
        Quantity {
            nanos: milli.saturating_mul(NANOS_PER_MILLI),
            format,
        }
    }

    /// A quantity of `nanos` billionths of a unit.
    pub fn from_nanos(nanos: i128, format: Format) -> Quantity {
        Quantity { nanos, format }
    }

    /// The format this quantity is printed in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// True if the quantity was written with a binary suffix (`Ki`, `Mi`, ...).
    pub fn is_binary(&self) -> bool {
        self.format == Format::BinarySI
    }

    /// The same value printed in another format.
    pub fn with_format(self, format: Format) -> Quantity {
        Quantity { format, ..self }
    }

    /// The value in nano-units (exact).
    pub fn nano_value(&self) -> i128 {
        self.nanos
    }

    /// The value in milli-units, rounded away from zero (as `MilliValue` in apimachinery).
    pub fn milli_value(&self) -> i128 {
        div_away_from_zero(self.nanos, NANOS_PER_MILLI)
    }

    /// The value in whole units, rounded away from zero (as `Value` in apimachinery).
    pub fn value(&self) -> i128 {
        div_away_from_zero(self.nanos, NANOS_PER_UNIT)
    }

    /// True if the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// True if the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// `max(self, 0)`, keeping the format.
    #[must_use]
    pub fn clamp_non_negative(self) -> Quantity {
        Quantity {
            nanos: self.nanos.max(0),
            format: self.format,
        }
    }

    /// `percent`% of this quantity, rounded down: to whole units for binary quantities
    /// (bytes) and to milli-units otherwise. The format is kept.
    #[must_use]
    pub fn percent(self, percent: u32) -> Quantity {
        let step = if self.is_binary() {
            NANOS_PER_UNIT
        } else {
            NANOS_PER_MILLI
        };
        let scaled = self.nanos.saturating_mul(i128::from(percent));
        let steps = scaled.div_euclid(step.saturating_mul(100));
        Quantity {
            nanos: steps.saturating_mul(step),
            format: self.format,
        }
    }

    /// This quantity rounded down to whole units (for integer-only resources).
    #[must_use]
    pub fn floor_units(self) -> Quantity {
        Quantity {
            nanos: self.nanos.div_euclid(NANOS_PER_UNIT) * NANOS_PER_UNIT,
            format: self.format,
        }
    }

    /// The canonical string apimachinery prints for this quantity: the largest suffix of the
    /// quantity's format that needs no fraction (`1500m`, `3`, `4608Mi`, `100M`, `1e3`).
    pub fn to_canonical_string(&self) -> String {
        canonical(self.nanos, self.format)
    }

    fn merged_format(self, other: Quantity) -> Format {
        if self.nanos == 0 {
            other.format
        } else {
            self.format
        }
    }
}

/// `a + b` saturates; a zero `a` takes the format of `b` (as apimachinery's `Add`).
impl Add for Quantity {
    type Output = Quantity;

    fn add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: self.merged_format(other),
        }
    }
}

/// `a - b` saturates; a zero `a` takes the format of `b` (as apimachinery's `Sub`).
impl Sub for Quantity {
    type Output = Quantity;

    fn sub(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: self.merged_format(other),
        }
    }
}

impl AddAssign for Quantity {
    fn add_assign(&mut self, other: Quantity) {
        *self = *self + other;
    }
}

impl SubAssign for Quantity {
    fn sub_assign(&mut self, other: Quantity) {
        *self = *self - other;
    }
}

impl Neg for Quantity {
    type Output = Quantity;

    fn neg(self) -> Quantity {
        Quantity {
            nanos: -self.nanos,
            format: self.format,
        }
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity::ZERO
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_canonical_string())
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

impl TryFrom<&K8sQuantity> for Quantity {
    type Error = QuantityError;

    fn try_from(q: &K8sQuantity) -> Result<Self, Self::Error> {
        parse(&q.0)
    }
}

impl TryFrom<K8sQuantity> for Quantity {
    type Error = QuantityError;

    fn try_from(q: K8sQuantity) -> Result<Self, Self::Error> {
        parse(&q.0)
    }
}

impl From<Quantity> for K8sQuantity {
    fn from(q: Quantity) -> Self {
        K8sQuantity(q.to_canonical_string())
    }
}

impl From<&Quantity> for K8sQuantity {
    fn from(q: &Quantity) -> Self {
        K8sQuantity(q.to_canonical_string())
    }
}

impl serde::Serialize for Quantity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_canonical_string())
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Same wire shape as k8s-openapi's Quantity: a string or a bare number.
        let raw = K8sQuantity::deserialize(deserializer)?;
        parse(&raw.0).map_err(serde::de::Error::custom)
    }
}

/// Rounds `n / d` away from zero (`d > 0`).
fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n > 0 {
        q + 1
    } else {
        q - 1
    }
}

/// The pieces of `<sign><digits>[.<digits>]<suffix>`.
struct Lexed<'a> {
    negative: bool,
    int_digits: &'a [u8],
    frac_digits: &'a [u8],
    suffix: &'a str,
}

/// Splits a quantity string the way apimachinery's `parseQuantityString` does.
fn lex(input: &str) -> Option<Lexed<'_>> {
    let bytes = input.as_bytes();
    let mut pos = 0;
    let mut negative = false;
    match bytes.first() {
        Some(b'-') => {
            negative = true;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    let int_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let int_digits = &bytes[int_start..pos];
    let mut frac_digits: &[u8] = &[];
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let frac_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        frac_digits = &bytes[frac_start..pos];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let suffix_start = pos;
    while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && (bytes[pos] == b'+' || bytes[pos] == b'-') {
        pos += 1;
    }
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != bytes.len() {
        return None;
    }
    // Every byte before `suffix_start` is ASCII, so this slice is on a char boundary.
    let suffix = input.get(suffix_start..)?;
    Some(Lexed {
        negative,
        int_digits,
        frac_digits,
        suffix,
    })
}

/// Decodes a suffix into (power of ten, power of two, format).
fn interpret_suffix(suffix: &str) -> Option<(i32, u32, Format)> {
    let decimal = |exp10| Some((exp10, 0, Format::DecimalSI));
    let binary = |exp2| Some((0, exp2, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let exp10 = exponent.parse::<i32>().ok()?;
            Some((exp10, 0, Format::DecimalExponent))
        }
    }
}

fn parse(input: &str) -> Result<Quantity, QuantityError> {
    match parse_plain(input) {
        Some(quantity) => Ok(quantity),
        None => parse_general(input),
    }
}

/// apimachinery's `ParseQuantity` for every accepted shape.
fn parse_general(input: &str) -> Result<Quantity, QuantityError> {
    if input.is_empty() {
        return Err(QuantityError::Empty);
    }
    let malformed = || QuantityError::Malformed {
        input: input.to_owned(),
    };
    let out_of_range = || QuantityError::OutOfRange {
        input: input.to_owned(),
    };
    let lexed = lex(input).ok_or_else(malformed)?;
    let (exp10, exp2, mut format) =
        interpret_suffix(lexed.suffix).ok_or_else(|| QuantityError::UnknownSuffix {
            input: input.to_owned(),
            suffix: lexed.suffix.to_owned(),
        })?;

    // Significant digits: leading zeros of the integer part and trailing zeros of the
    // fraction carry no value.
    let int_digits = trim_leading_zeros(lexed.int_digits);
    let frac_digits = trim_trailing_zeros(lexed.frac_digits);
    let binary = format == Format::BinarySI;
    let mut nanos = if int_digits.len() + frac_digits.len() > MAX_DIGITS {
        // Binary values of 10^19 bytes and more are capped anyway (as apimachinery does).
        if binary && int_digits.len() > 19 {
            MAX_BINARY_NANOS
        } else {
            return Err(out_of_range());
        }
    } else {
        match nano_magnitude(int_digits, frac_digits, exp10, exp2) {
            Some(nanos) => nanos,
            // An overflowing binary value is far above the cap.
            None if binary => MAX_BINARY_NANOS,
            None => return Err(out_of_range()),
        }
    };

    if binary {
        nanos = nanos.min(MAX_BINARY_NANOS);
        if nanos > 0 && nanos < NANOS_PER_UNIT {
            format = Format::DecimalSI;
        }
    }
    if lexed.negative {
        nanos = -nanos;
    }
    Ok(Quantity { nanos, format })
}

/// `digits * 10^exp10 * 2^exp2` in nano-units, rounded up (away from zero) to a whole
/// nano-unit; `None` if it does not fit an `i128`.
fn nano_magnitude(int_digits: &[u8], frac_digits: &[u8], exp10: i32, exp2: u32) -> Option<i128> {
    let mut mantissa: i128 = 0;
    for &digit in int_digits.iter().chain(frac_digits) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    if mantissa == 0 {
        return Some(0);
    }
    let mantissa = mantissa
        .checked_shl(exp2)
        .filter(|m| m >> exp2 == mantissa)?;
    // value = mantissa * 10^(exp10 - frac_len); in nanos add 9 to the power of ten.
    let frac_len = i32::try_from(frac_digits.len()).ok()?;
    let power = exp10.checked_sub(frac_len)?.checked_add(9)?;
    if power >= 0 {
        mantissa.checked_mul(10i128.checked_pow(u32::try_from(power).ok()?)?)
    } else {
        // Sub-nano precision rounds up so that a non-zero request never becomes zero.
        match u32::try_from(-i64::from(power))
            .ok()
            .and_then(|p| 10i128.checked_pow(p))
        {
            Some(scale) => Some(div_away_from_zero(mantissa, scale)),
            None => Some(1),
        }
    }
}

/// Fast path for the shapes resource lists are full of (`250m`, `4Gi`, `110`): up to 18
/// digits and a common suffix, without sign, fraction or exponent. `None` sends the input
/// to the general parser, which gives the same result for these shapes.
fn parse_plain(input: &str) -> Option<Quantity> {
    let bytes = input.as_bytes();
    let digits = bytes
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(bytes.len());
    if digits == 0 || digits > 18 {
        return None;
    }
    // At most 18 digits: fits a u64, widened once below.
    let value = bytes[..digits]
        .iter()
        .fold(0u64, |acc, b| acc * 10 + u64::from(b - b'0'));
    let (scale, format) = match &bytes[digits..] {
        b"" => (NANOS_PER_UNIT, Format::DecimalSI),
        b"m" => (NANOS_PER_MILLI, Format::DecimalSI),
        b"k" => (NANOS_PER_UNIT * 1_000, Format::DecimalSI),
        b"M" => (NANOS_PER_UNIT * 1_000_000, Format::DecimalSI),
        b"G" => (NANOS_PER_UNIT * 1_000_000_000, Format::DecimalSI),
        b"Ki" => (NANOS_PER_UNIT << 10, Format::BinarySI),
        b"Mi" => (NANOS_PER_UNIT << 20, Format::BinarySI),
        b"Gi" => (NANOS_PER_UNIT << 30, Format::BinarySI),
        b"Ti" => (NANOS_PER_UNIT << 40, Format::BinarySI),
        _ => return None,
    };
    let nanos = i128::from(value).checked_mul(scale)?;
    // Binary values past the cap take the general path, which caps them.
    if format == Format::BinarySI && nanos > MAX_BINARY_NANOS {
        return None;
    }
    Some(Quantity { nanos, format })
}

fn trim_leading_zeros(digits: &[u8]) -> &[u8] {
    let start = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    &digits[start..]
}

fn trim_trailing_zeros(digits: &[u8]) -> &[u8] {
    let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
    &digits[..end]
}

/// apimachinery's `CanonicalizeBytes`.
fn canonical(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".to_owned();
    }
    let format = match format {
        // Small or fractional binary values print as decimal so that nothing is rounded.
        Format::BinarySI if nanos.abs() < 1024 * NANOS_PER_UNIT || nanos % NANOS_PER_UNIT != 0 => {
            Format::DecimalSI
        }
        other => other,
    };
    if format == Format::BinarySI {
        let mut mantissa = nanos / NANOS_PER_UNIT;
        let mut exponent = 0;
        while exponent < 7 && mantissa % 1024 == 0 {
            mantissa /= 1024;
            exponent += 1;
        }
        // Past `Ei` there is no binary suffix: print the exact value in decimal instead.
        if let Some(suffix) = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(exponent) {
            return format!("{mantissa}{suffix}");
        }
        return canonical_decimal(nanos, Format::DecimalExponent);
    }
    canonical_decimal(nanos, format)
}

/// Canonical decimal form: the largest power of ten, a multiple of three, that leaves an
/// integer mantissa.
fn canonical_decimal(nanos: i128, format: Format) -> String {
    let mut mantissa = nanos;
    let mut exponent: i32 = -9;
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    let remainder = exponent.rem_euclid(3);
    mantissa *= 10i128.pow(remainder.unsigned_abs());
    exponent -= remainder;
    let suffix = match (format, exponent) {
        (_, 0) => "",
        (Format::DecimalSI | Format::BinarySI, -9) => "n",
        (Format::DecimalSI | Format::BinarySI, -6) => "u",
        (Format::DecimalSI | Format::BinarySI, -3) => "m",
        (Format::DecimalSI | Format::BinarySI, 3) => "k",
        (Format::DecimalSI | Format::BinarySI, 6) => "M",
        (Format::DecimalSI | Format::BinarySI, 9) => "G",
        (Format::DecimalSI | Format::BinarySI, 12) => "T",
        (Format::DecimalSI | Format::BinarySI, 15) => "P",
        (Format::DecimalSI | Format::BinarySI, 18) => "E",
        // Exponent form, also for decimal SI past `E` (apimachinery prints 1000E as 1e21).
        _ => return format!("{mantissa}e{exponent}"),
    };
    format!("{mantissa}{suffix}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    /// Inputs and their canonical strings, from apimachinery's quantity tests
    /// (`TestQuantityParse`, `TestQuantityString`, `TestQuantityParseEmit`).
    #[test]
    fn canonical_forms_match_apimachinery() {
        let table = [
            ("0", "0"),
            ("0n", "0"),
            ("0Ki", "0"),
            ("0Ti", "0"),
            ("1", "1"),
            ("1Ki", "1Ki"),
            ("8Ki", "8Ki"),
            ("7Mi", "7Mi"),
            ("6Gi", "6Gi"),
            ("5Ti", "5Ti"),
            ("4Pi", "4Pi"),
            ("3Ei", "3Ei"),
            ("10Ti", "10Ti"),
            ("100Ti", "100Ti"),
            ("5n", "5n"),
            ("4u", "4u"),
            ("3m", "3m"),
            ("9", "9"),
            ("8k", "8k"),
            ("50k", "50k"),
            ("7M", "7M"),
            ("6G", "6G"),
            ("5T", "5T"),
            ("40T", "40T"),
            ("300T", "300T"),
            ("2P", "2P"),
            ("1E", "1E"),
            ("1E-3", "1e-3"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1e9", "1e9"),
            ("1E12", "1e12"),
            ("1e15", "1e15"),
            ("1E18", "1e18"),
            ("1e14", "100e12"),
            ("1e13", "10e12"),
            ("100.035k", "100035"),
            ("0.001", "1m"),
            ("0.0005k", "500m"),
            ("0.005", "5m"),
            ("0.05", "50m"),
            ("0.5", "500m"),
            ("0.00050k", "500m"),
            ("0.5e0", "500e-3"),
            ("0.5e-1", "50e-3"),
            ("0.5e-2", "5e-3"),
            ("10.035M", "10035k"),
            ("1.2e3", "1200"),
            ("1.3E+6", "1300e3"),
            ("1.40e9", "1400e6"),
            ("1.53E12", "1530e9"),
            ("1.6e15", "1600e12"),
            ("1.7E18", "1700e15"),
            ("9.01", "9010m"),
            ("8.1k", "8100"),
            ("7.123456M", "7123456"),
            ("6.987654321G", "6987654321"),
            ("5.444T", "5444G"),
            ("40.1T", "40100G"),
            ("300.2T", "300200G"),
            ("2.5P", "2500T"),
            ("1.01E", "1010P"),
            ("3.001n", "4n"),
            ("1.1E-9", "2e-9"),
            ("0.0000000001", "1n"),
            ("0.0000000005", "1n"),
            ("0.00000012345", "124n"),
            ("9Ei", "9223372036854775807"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("999999999999999999999999999999Ei", "9223372036854775807"),
            ("12E", "12E"),
            ("100.035Ki", "102435840m"),
            ("0.5Mi", "512Ki"),
            ("0.05Gi", "53687091200m"),
            ("0.025Ti", "27487790694400m"),
            ("0.000000000001Ki", "2n"),
            (".001", "1m"),
            (".0001k", "100m"),
            ("1.", "1"),
            ("1.G", "1G"),
            ("1.5", "1500m"),
            ("1.5Gi", "1536Mi"),
            ("1000", "1k"),
            ("1024", "1024"),
            ("1024Mi", "1Gi"),
            ("1536", "1536"),
            ("0.5Ki", "512"),
            ("100M", "100M"),
            ("-1", "-1"),
            ("-1.5Gi", "-1536Mi"),
            ("+3", "3"),
            ("1000m", "1"),
            ("1000E", "1e21"),
            ("5000E", "5e21"),
            ("10000E", "10e21"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            ("1000M", "1G"),
            ("300Mi", "300Mi"),
            ("1001Gi", "1001Gi"),
            ("1.08", "1080m"),
            ("0.08", "80m"),
            ("1234567M", "1234567M"),
            ("1025Ki", "1025Ki"),
            ("2000Ki", "2000Ki"),
        ];
        for (input, want) in table {
            assert_eq!(
                q(input).to_canonical_string(),
                want,
                "canonical form of {input:?}"
            );
        }
    }

    #[test]
    fn fast_path_agrees_with_the_general_parser() {
        let inputs = [
            "0",
            "1",
            "110",
            "250m",
            "8k",
            "7M",
            "6G",
            "1Ki",
            "128Mi",
            "60055732Ki",
            "4Gi",
            "5Ti",
            "0Ki",
            "999999999999999999",
            "999999999999999999Ti",
            "9223372036854775807Ki",
            "8796093022207Mi",
        ];
        for input in inputs {
            let general = parse_general(input).unwrap();
            match parse_plain(input) {
                Some(fast) => {
                    assert_eq!(fast.nano_value(), general.nano_value(), "value of {input}");
                    assert_eq!(fast.format(), general.format(), "format of {input}");
                }
                // Only values the general parser caps may skip the fast path.
                None => assert_eq!(
                    general.value(),
                    i64::MAX as i128,
                    "{input} left the fast path"
                ),
            }
        }
        for input in [
            "1.5", "-1", "+1", "1e3", "1E", "1Ei", "1Pi", "1n", "1u", "1P", "1T", "1K", "",
        ] {
            assert!(parse_plain(input).is_none(), "{input} is not a plain shape");
        }
    }

    #[test]
    fn parsing_remembers_the_format() {
        let table = [
            ("1Ki", Format::BinarySI),
            ("0Mi", Format::BinarySI),
            ("1k", Format::DecimalSI),
            ("1e3", Format::DecimalExponent),
            ("1.1E-9", Format::DecimalExponent),
            // apimachinery: a binary value below one becomes decimal.
            ("0.000000000001Ki", Format::DecimalSI),
        ];
        for (input, want) in table {
            assert_eq!(q(input).format(), want, "format of {input:?}");
        }
    }

    #[test]
    fn values_are_exact() {
        let table: [(&str, i128, i128); 6] = [
            ("1.5", 1500, 2),
            ("100m", 100, 1),
            ("6Gi", 6 * 1024 * 1024 * 1024 * 1000, 6 * 1024 * 1024 * 1024),
            ("1n", 1, 1),
            ("-1n", -1, -1),
            ("0", 0, 0),
        ];
        for (input, milli, units) in table {
            assert_eq!(q(input).milli_value(), milli, "milli value of {input:?}");
            assert_eq!(q(input).value(), units, "value of {input:?}");
        }
    }

    #[test]
    fn malformed_input_is_rejected() {
        let table = [
            ("", QuantityError::Empty),
            (
                "Non-Numeric",
                QuantityError::Malformed {
                    input: "Non-Numeric".into(),
                },
            ),
            (
                "1.5.5",
                QuantityError::Malformed {
                    input: "1.5.5".into(),
                },
            ),
            (
                "1 Gi",
                QuantityError::Malformed {
                    input: "1 Gi".into(),
                },
            ),
            ("Mi", QuantityError::Malformed { input: "Mi".into() }),
            (".", QuantityError::Malformed { input: ".".into() }),
            (
                "1Gb",
                QuantityError::Malformed {
                    input: "1Gb".into(),
                },
            ),
            (
                "1K",
                QuantityError::UnknownSuffix {
                    input: "1K".into(),
                    suffix: "K".into(),
                },
            ),
            (
                "1e",
                QuantityError::UnknownSuffix {
                    input: "1e".into(),
                    suffix: "e".into(),
                },
            ),
            (
                "1ee3",
                QuantityError::UnknownSuffix {
                    input: "1ee3".into(),
                    suffix: "ee3".into(),
                },
            ),
            (
                "1e99999999999",
                QuantityError::UnknownSuffix {
                    input: "1e99999999999".into(),
                    suffix: "e99999999999".into(),
                },
            ),
            (
                "1e40",
                QuantityError::OutOfRange {
                    input: "1e40".into(),
                },
            ),
        ];
        for (input, want) in table {
            assert_eq!(Quantity::parse(input), Err(want), "parsing {input:?}");
        }
    }

    #[test]
    fn arithmetic_is_exact() {
        // (a, op, b, canonical result)
        let table = [
            ("4", "sub", "1", "3"),
            ("8Gi", "sub", "2Gi", "6Gi"),
            ("100m", "add", "0", "100m"),
            ("0", "add", "1Gi", "1Gi"),
            ("1", "sub", "1500m", "-500m"),
            ("0", "sub", "1Gi", "-1Gi"),
            ("1Gi", "min", "1G", "1G"),
            ("1Gi", "max", "1G", "1Gi"),
            ("300m", "add", "0.7", "1"),
        ];
        for (a, op, b, want) in table {
            let (a_q, b_q) = (q(a), q(b));
            let got = match op {
                "add" => a_q + b_q,
                "sub" => a_q - b_q,
                "min" => a_q.min(b_q),
                _ => a_q.max(b_q),
            };
            assert_eq!(got.to_canonical_string(), want, "{a} {op} {b}");
        }
    }

    #[test]
    fn percent_rounds_down_at_the_right_step() {
        let table = [
            ("3", 50, "1500m"),
            ("6Gi", 75, "4608Mi"),
            ("1m", 33, "0"),
            ("10m", 33, "3m"),
            ("1001", 50, "500500m"),
            // Binary quantities round down to whole bytes.
            ("1025Ki", 33, "346368"),
            ("3Ki", 100, "3Ki"),
            ("3Ki", 0, "0"),
        ];
        for (input, percent, want) in table {
            assert_eq!(
                q(input).percent(percent).to_canonical_string(),
                want,
                "{percent}% of {input}"
            );
        }
    }

    #[test]
    fn floor_units_drops_fractions() {
        for (input, want) in [("1500m", "1"), ("2", "2"), ("999m", "0"), ("4Gi", "4Gi")] {
            assert_eq!(
                q(input).floor_units().to_canonical_string(),
                want,
                "floor of {input}"
            );
        }
    }

    #[test]
    fn binary_past_ei_prints_in_decimal() {
        let two_pow_70 = Quantity::from_units(1 << 70, Format::BinarySI);
        assert_eq!(two_pow_70.to_canonical_string(), "1180591620717411303424");
        assert_eq!(
            Quantity::from_units(1 << 60, Format::BinarySI).to_canonical_string(),
            "1Ei"
        );
    }

    #[test]
    fn equality_ignores_format() {
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1"), q("1000m"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("100m") < q("1"));
    }

    #[test]
    fn converts_to_and_from_k8s_openapi() {
        let k8s = K8sQuantity("1.5Gi".into());
        let ours = Quantity::try_from(&k8s).unwrap();
        assert_eq!(K8sQuantity::from(ours), K8sQuantity("1536Mi".into()));
        assert!(Quantity::try_from(K8sQuantity("bogus".into())).is_err());
    }

    #[test]
    fn serde_uses_the_canonical_string() {
        let parsed: Quantity = serde_json::from_str("\"1.5\"").unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"1500m\"");
        let number: Quantity = serde_json::from_str("2").unwrap();
        assert_eq!(number, q("2"));
        assert!(serde_json::from_str::<Quantity>("\"2 cpus\"").is_err());
    }
}
