//! Placeholder: being written.
use core::fmt;
/// Errors of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestError {}
impl ManifestError {
    /// Runtime status.
    pub fn status(&self) -> crate::Status { match *self {} }
}
impl fmt::Display for ManifestError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
/// Warnings of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestWarning {}
impl fmt::Display for ManifestWarning {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
