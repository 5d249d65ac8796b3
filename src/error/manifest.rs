//! What a manifest refuses and notices once it is valid JSON: the runtime's rules per key,
//! with its wording (docs/format.md §12A).

use super::Text;

neff_macros::refusals!("schema/errors.toml", Manifest);

use super::json::JsonType;

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

impl ManifestError {
    /// The refusal for required key `key` absent from `within`. Where the runtime's message is
    /// one of the seed's refusals, that refusal, with its own code (the schema's `missing` text
    /// selects it; `tests` hold each text to its variant's message); else `MissingKey`.
    pub fn missing(key: &'static RequiredKey, within: Name) -> ManifestError {
        match key.message {
            "Missing required fields in NEFF JSON" => ManifestError::MissingRequiredFields { key: key.key },
            "Missing dltype or shape in attrs" => ManifestError::MissingDltypeOrShape { key: key.key },
            "Invalid Neff: no Outputs" => ManifestError::NoOutputs,
            _ => ManifestError::MissingKey { key, within },
        }
    }

    /// The refusal for a malformed typed list whose runtime message is `message` (the schema's
    /// `format_error`): the seed's `dltype` and `shape` refusals have their own codes.
    pub fn bad_format(message: &'static str) -> ManifestError {
        match message {
            "Invalid dltype data format" => ManifestError::InvalidDltypeFormat,
            "Invalid shape data format" => ManifestError::InvalidShapeFormat,
            _ => ManifestError::BadFormat { message },
        }
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
