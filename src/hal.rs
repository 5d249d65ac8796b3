//! Placeholder: being written.
use core::fmt;
/// Errors of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HalError {}
impl HalError {
    /// Runtime status.
    pub fn status(&self) -> crate::Status { match *self {} }
}
impl fmt::Display for HalError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
