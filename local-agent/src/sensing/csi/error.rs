//! Why a record was rejected. Replay counts rejections by [`ParseError::reason`], so every
//! failure mode gets its own variant rather than a free-form message.

/// A record that could not be decoded. Parsers never panic on input; they return one of these.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("record is empty")]
    Empty,
    #[error("record is {len} bytes, above the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("not a CSI record")]
    NotCsi,
    #[error("record is not valid UTF-8")]
    InvalidUtf8,
    #[error("expected {expected} fields, found {found}")]
    FieldCount {
        expected: &'static str,
        found: usize,
    },
    #[error("field `{field}` is invalid: {value:?}")]
    InvalidField { field: &'static str, value: String },
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    #[error("CSI buffer is malformed: {0}")]
    MalformedBuffer(&'static str),
    #[error("CSI buffer is empty")]
    EmptyBuffer,
    #[error("CSI buffer has an odd number of bytes ({0})")]
    OddBuffer(usize),
    #[error("CSI buffer has {len} bytes, above the {max}-byte limit")]
    BufferTooLarge { len: usize, max: usize },
    #[error("timestamp is not a finite number")]
    NonFiniteTimestamp,
    #[error("truncated: need {needed} bytes, got {got}")]
    Truncated { needed: usize, got: usize },
    #[error("length mismatch: expected {expected}, got {got}")]
    LengthMismatch { expected: usize, got: usize },
    #[error("wrong magic 0x{found:08X}, expected 0x{expected:08X}")]
    WrongMagic { expected: u32, found: u32 },
    #[error("CRC-32 mismatch: packet carries 0x{stored:08X}, computed 0x{computed:08X}")]
    BadCrc { stored: u32, computed: u32 },
    #[error("invalid hex: {0}")]
    InvalidHex(&'static str),
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("invalid zip container: {0}")]
    Zip(String),
    #[error("invalid NPY array `{array}`: {reason}")]
    Npy { array: String, reason: String },
}

impl ParseError {
    /// A stable snake_case key for counting rejections (replay statistics, metrics).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::TooLong { .. } => "too_long",
            Self::NotCsi => "not_csi",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::FieldCount { .. } => "field_count",
            Self::InvalidField { .. } => "invalid_field",
            Self::MissingField(_) => "missing_field",
            Self::MalformedBuffer(_) => "malformed_buffer",
            Self::EmptyBuffer => "empty_buffer",
            Self::OddBuffer(_) => "odd_buffer",
            Self::BufferTooLarge { .. } => "buffer_too_large",
            Self::NonFiniteTimestamp => "non_finite_timestamp",
            Self::Truncated { .. } => "truncated",
            Self::LengthMismatch { .. } => "length_mismatch",
            Self::WrongMagic { .. } => "wrong_magic",
            Self::BadCrc { .. } => "bad_crc",
            Self::InvalidHex(_) => "invalid_hex",
            Self::Json(_) => "json",
            Self::Zip(_) => "zip",
            Self::Npy { .. } => "npy",
        }
    }

    /// An invalid-field error that quotes at most a short prefix of the offending text, so a
    /// hostile record cannot make error messages (and logs) arbitrarily large.
    pub(crate) fn invalid(field: &'static str, value: &str) -> Self {
        Self::InvalidField {
            field,
            value: clip(value, 32).to_string(),
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
/// `String::truncate` panics mid-character, and messages from serde or zip can quote input.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_never_splits_a_character() {
        assert_eq!(clip("abc", 2), "ab");
        assert_eq!(clip("abc", 10), "abc");
        // 'é' is 2 bytes, '€' 3: cutting inside either backs off to the boundary.
        assert_eq!(clip("aé", 2), "a");
        assert_eq!(clip("€€", 4), "€");
        assert_eq!(clip("€", 0), "");
    }
}
