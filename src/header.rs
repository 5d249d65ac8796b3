//! Placeholder: being written.
use core::fmt;

/// Errors of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderError {}
impl fmt::Display for HeaderError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
/// Warnings of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderWarning {}
impl fmt::Display for HeaderWarning {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
impl HeaderError {
    /// Runtime status.
    pub fn status(&self) -> crate::Status { match *self {} }
}
