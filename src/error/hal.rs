//! What a device behind the `Hal` refuses.

use core::fmt;

/// Why the device refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HalError {
    /// No free span of device memory is large enough.
    OutOfMemory {
        /// The requested size in bytes.
        requested: u64,
        /// The requested alignment in bytes.
        align: u64,
        /// Free bytes in total (possibly fragmented).
        free: u64,
        /// The largest free contiguous span in bytes.
        largest_free: u64,
    },
    /// The backend's table of regions is full (a fixed capacity).
    RegionTableFull {
        /// The name of the capacity (the const generic that sets it).
        limit: &'static str,
        /// Its value.
        capacity: u32,
    },
    /// The backend has issued every region id it can.
    IdsExhausted,
    /// A request for zero bytes.
    ZeroSize,
    /// An alignment that is not a power of two.
    BadAlignment {
        /// The alignment asked for.
        align: u64,
    },
    /// The id names no live region (never issued, released, or consumed by an adopt).
    UnknownRegion {
        /// The id.
        region: RegionId,
    },
    /// A write would end past the region.
    OutOfBounds {
        /// The region.
        region: RegionId,
        /// The write's offset into the region.
        offset: u64,
        /// The write's length.
        len: u64,
        /// The region's size.
        size: u64,
    },
    /// The backend requires sequential writes and this one is not at the write cursor.
    OutOfOrderWrite {
        /// The region.
        region: RegionId,
        /// The offset the next write must start at.
        expected: u64,
        /// The offset this write started at.
        offset: u64,
    },
    /// An adopt request smaller than the staged region it would hold.
    AdoptTooSmall {
        /// The staged region.
        region: RegionId,
        /// The staged region's size.
        staged: u64,
        /// The requested size.
        requested: u64,
    },
}

impl HalError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            HalError::OutOfMemory { .. } => 1,
            HalError::RegionTableFull { .. } => 2,
            HalError::IdsExhausted => 3,
            HalError::ZeroSize => 4,
            HalError::BadAlignment { .. } => 5,
            HalError::UnknownRegion { .. } => 6,
            HalError::OutOfBounds { .. } => 7,
            HalError::OutOfOrderWrite { .. } => 8,
            HalError::AdoptTooSmall { .. } => 9,
        }
    }
}

impl HalError {
    /// The runtime status: out of memory or of a table is `NRT_RESOURCE`, a request the
    /// manifest made impossible is `NRT_INVALID`, a misuse of the device is `NRT_FAILURE`.
    pub fn status(&self) -> crate::Status {
        use crate::Status;
        match self {
            HalError::OutOfMemory { .. } | HalError::RegionTableFull { .. } | HalError::IdsExhausted => {
                Status::Resource
            }
            HalError::ZeroSize
            | HalError::BadAlignment { .. }
            | HalError::OutOfBounds { .. }
            | HalError::AdoptTooSmall { .. } => Status::Invalid,
            HalError::UnknownRegion { .. } | HalError::OutOfOrderWrite { .. } => Status::Failure,
        }
    }
}

impl fmt::Display for HalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HalError::OutOfMemory { requested, align, free, largest_free } => write!(
                f,
                "device out of memory: requested {requested} bytes (align {align}), \
                 {free} bytes free, largest free span {largest_free} bytes"
            ),
            HalError::RegionTableFull { limit, capacity } => {
                write!(f, "capacity {limit} = {capacity} exceeded (device region table)")
            }
            HalError::IdsExhausted => f.write_str("device region ids exhausted"),
            HalError::ZeroSize => f.write_str("device allocation of 0 bytes"),
            // The runtime's wording for a var alignment (spec §12A).
            HalError::BadAlignment { align } => {
                write!(f, "alignment provided not power of 2. alignment={align}")
            }
            HalError::UnknownRegion { region } => write!(f, "device region {region} is not live"),
            HalError::OutOfBounds { region, offset, len, size } => {
                write!(f, "write of {len} bytes at offset {offset} overruns device region {region} of {size} bytes")
            }
            HalError::OutOfOrderWrite { region, expected, offset } => {
                write!(f, "out-of-order write to device region {region}: at offset {offset}, expected {expected}")
            }
            HalError::AdoptTooSmall { region, staged, requested } => {
                write!(f, "cannot adopt staged region {region} of {staged} bytes into {requested} bytes")
            }
        }
    }
}

/// Handle to one device region, issued by a [`Hal`](crate::hal::Hal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionId(pub u32);

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}
