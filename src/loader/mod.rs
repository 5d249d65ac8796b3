//! The single-pass loader: routes members, streams payloads to the device, binds the chain.

pub mod payload;
pub mod route;

use core::fmt;
/// Errors of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainError {}
impl ChainError {
    /// Runtime status.
    pub fn status(&self) -> crate::Status { match *self {} }
}
impl fmt::Display for ChainError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
/// Warnings of this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainWarning {}
impl fmt::Display for ChainWarning {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result { match *self {} }
}
