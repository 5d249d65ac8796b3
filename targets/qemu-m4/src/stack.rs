//! Stack high-water mark by painting, and the size of the statics.
//!
//! cortex-m-rt's `paint-stack` feature fills the stack region (`_stack_end` to `_stack_start`,
//! set in `memory.x`) with [`STACK_PAINT_VALUE`] before `main` runs. The stack grows down from
//! `_stack_start`; the lowest word that no longer holds the paint is the deepest the stack has
//! been. Reading the region needs raw reads of linker-placed memory: the one `unsafe` block of
//! the firmware, confined to this module (the `neff` core stays `forbid(unsafe_code)`).
#![allow(unsafe_code)]

use core::ptr::addr_of;

use cortex_m_rt::STACK_PAINT_VALUE;

extern "C" {
    /// Bottom of the stack region (lowest address), from `memory.x`.
    static _stack_end: u32;
    /// Top of the stack region (the initial stack pointer), from `memory.x`.
    static _stack_start: u32;
    /// Start of `.data` (the first static in RAM), from cortex-m-rt's `link.x`.
    static __sdata: u32;
    /// End of `.uninit` (the last static in RAM), from cortex-m-rt's `link.x`.
    static __euninit: u32;
    /// End of the statics region, from `memory.x`.
    static _ram_budget_end: u32;
}

/// Stack figures in bytes.
pub struct StackUsage {
    /// Size of the stack region.
    pub region: usize,
    /// Deepest use so far: from the top of the region down to the lowest unpainted word.
    pub peak: usize,
}

/// The stack region and how much of it has been used since reset.
pub fn usage() -> StackUsage {
    let bottom = addr_of!(_stack_end);
    let top = addr_of!(_stack_start);
    let region = top as usize - bottom as usize;
    let words = region / 4;
    // SAFETY: `_stack_end.._stack_start` is the RAM stack region laid out by memory.x (4-byte
    // aligned, checked by cortex-m-rt's link.x); every word in it is readable. The words below
    // the current stack pointer belong to no live object; volatile reads of u32 cannot tear.
    let untouched =
        (0..words).take_while(|&i| unsafe { core::ptr::read_volatile(bottom.add(i)) } == STACK_PAINT_VALUE).count();
    StackUsage { region, peak: region - untouched * 4 }
}

/// Bytes of RAM taken by statics (`.data`, `.bss`, `.uninit`).
pub fn statics_size() -> usize {
    addr_of!(__euninit) as usize - addr_of!(__sdata) as usize
}

/// The RAM the image is linked against: stack region plus statics region.
pub fn linked_budget() -> usize {
    addr_of!(_ram_budget_end) as usize - addr_of!(_stack_end) as usize
}
