//! Errors and warnings of the chain checks: what the manifests name against what the tar holds.

pub use crate::error::{ChainError, ChainWarning, MemberText, ShortText};

/// The runtime's checks on an instruction stream's size: a whole number of 64-byte slots
/// (else a warning: the runtime counts `size >> 6` instructions) and at most `u32::MAX` bytes
/// (`Instruction size %zu for %s exceeds maximum supported size %u`) of the stream `member`.
pub fn check_instr_size(size: u64, member: &str) -> Result<Option<ChainWarning>, ChainError> {
    if size > u64::from(u32::MAX) {
        return Err(ChainError::InstrTooLarge { size, member: ShortText::new(member) });
    }
    Ok((size % 64 != 0).then_some(ChainWarning::InstrNotMultipleOf64 { size }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn instruction_sizes_follow_the_runtime() {
        assert_eq!(check_instr_size(768, "PE.bin"), Ok(None));
        assert_eq!(check_instr_size(0, "PE.bin"), Ok(None));
        assert_eq!(check_instr_size(200, "PE.bin"), Ok(Some(ChainWarning::InstrNotMultipleOf64 { size: 200 })));
        assert_eq!(check_instr_size(u64::from(u32::MAX) - 63, "PE.bin"), Ok(None));
        let too_big = u64::from(u32::MAX) + 1;
        let e = ChainError::InstrTooLarge { size: too_big, member: ShortText::new("sg00/PE.bin") };
        assert_eq!(check_instr_size(too_big, "sg00/PE.bin"), Err(e));
        let mut text = heapless::String::<96>::new();
        core::fmt::write(&mut text, format_args!("{e}")).unwrap();
        assert_eq!(
            text.as_str(),
            "Instruction size 4294967296 for sg00/PE.bin exceeds maximum supported size 4294967295"
        );
    }
}
