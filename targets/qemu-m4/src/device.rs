//! The objects that are not controller RAM: the simulated accelerator and the checker's table
//! of the payloads it saw, in the `.device` section (`memory.x`: past the 128 KiB budget).
//!
//! The device's region table stands for the accelerator's own memory bookkeeping, and the
//! checker's table is test instrumentation; both grow with the model (one record per payload:
//! hundreds for the generated big model), so neither belongs in the controller's budget.
//!
//! The simulated device also computes on its own side: [`on_device_stack`] runs a call on a
//! stack in this section, and the firmware makes every call into the device model through it
//! (its construction, which the core builds by value, a few copies of the whole region table;
//! its first-fit allocator, which sorts a `REGIONS`-long scratch array on the stack). The
//! controller's stack, measured against the budget, then holds only what the loader uses.
//!
//! Placing a static in a named section (`#[link_section]`), lending it out as `&'static mut`
//! and switching stacks take `unsafe` code (the lint counts `link_section` as such): confined
//! to this module. The section is NOLOAD (not initialised at reset), so the statics are
//! `MaybeUninit` (or plain words, for the stack) and the firmware writes each object before use.
#![allow(unsafe_code)]

use core::mem::MaybeUninit;
use core::ptr::addr_of;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::{FwDevice, SeenTable};

#[link_section = ".device.neff_qemu_m4.DEVICE"]
static mut DEVICE: MaybeUninit<FwDevice> = MaybeUninit::uninit();

#[link_section = ".device.neff_qemu_m4.SEEN"]
static mut SEEN: MaybeUninit<SeenTable> = MaybeUninit::uninit();

/// Words of the device-side stack: building a 640-region device by value takes about 100 KiB.
const DEVICE_STACK_WORDS: usize = 160 * 1024 / 8;

/// The device-side stack (8-byte words: AAPCS wants the stack pointer 8-byte aligned).
#[link_section = ".device.neff_qemu_m4.DEVICE_STACK"]
static mut DEVICE_STACK: MaybeUninit<[u64; DEVICE_STACK_WORDS]> = MaybeUninit::uninit();

/// Set while a call runs on the device-side stack (a nested call stays on it).
static ON_DEVICE_STACK: AtomicBool = AtomicBool::new(false);

/// Runs `f` on the device-side stack, for the device model's own work.
pub fn on_device_stack<R>(f: impl FnOnce() -> R) -> R {
    let mut f = Some(f);
    let mut result = None;
    let mut call = || result = f.take().map(|f| f());
    let mut call: &mut dyn FnMut() = &mut call;
    // `f` runs in `run`'s frame (never inlined here), whichever stack that is on.
    if ON_DEVICE_STACK.swap(true, Ordering::AcqRel) {
        // Already there: switching again would start over at the top of that stack.
        run(&mut call);
    } else {
        let top = addr_of_mut!(DEVICE_STACK).cast::<u64>().wrapping_add(DEVICE_STACK_WORDS);
        // SAFETY: the stack pointer moves to the top of `DEVICE_STACK` (8-byte aligned, used by
        // nothing else: `ON_DEVICE_STACK` keeps calls from nesting onto it) for the call to
        // `run`, and is restored from r4, which the AAPCS makes `run` preserve. What else the
        // call may change is declared clobbered: the AAPCS caller-saved registers (r0-r3, r12,
        // lr, d0-d7; d8-d15 are callee-saved). `run` never unwinds: the image aborts on panic.
        unsafe {
            core::arch::asm!(
                "mov r4, sp",
                "mov sp, {top}",
                "blx {run}",
                "mov sp, r4",
                top = in(reg) top,
                run = in(reg) run as extern "C" fn(*mut &mut dyn FnMut()),
                inout("r0") &mut call as *mut &mut dyn FnMut() => _,
                out("r1") _, out("r2") _, out("r3") _, out("r4") _, out("r12") _, out("lr") _,
                out("d0") _, out("d1") _, out("d2") _, out("d3") _,
                out("d4") _, out("d5") _, out("d6") _, out("d7") _,
            );
        }
        ON_DEVICE_STACK.store(false, Ordering::Release);
    }
    result.unwrap_or_else(|| unreachable!("the call ran"))
}

/// Calls `call`: the one frame that runs on the device-side stack.
#[inline(never)]
extern "C" fn run(call: *mut &mut dyn FnMut()) {
    // SAFETY: `call` points at the `&mut dyn FnMut()` of `on_device_stack`, alive for the call.
    unsafe { (*call)() }
}

/// Set once [`take`] has lent the statics out (in `.bss`: zero, i.e. false, at reset).
static TAKEN: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// Start of the `.device` section, from `memory.x`.
    static __sdevice: u32;
    /// End of the `.device` section, from `memory.x`.
    static __edevice: u32;
}

/// The device-side objects, lent out once.
pub struct DeviceSide {
    /// The simulated device's slot: written afresh for each NEFF.
    pub device: &'static mut MaybeUninit<FwDevice>,
    /// The checker's table: cleared for each NEFF.
    pub seen: &'static mut SeenTable,
}

/// The device-side objects, the first time; `None` after.
pub fn take() -> Option<DeviceSide> {
    if TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    // SAFETY: `TAKEN` lets this run once, so these are the only references ever made to the
    // two statics, and nothing else names them. `MaybeUninit` needs no initialised bytes.
    let (device, seen) = unsafe { (&mut *addr_of_mut!(DEVICE), &mut *addr_of_mut!(SEEN)) };
    Some(DeviceSide { device, seen: seen.write(SeenTable::new()) })
}

/// Bytes of the `.device` section.
pub fn section_size() -> usize {
    // Addresses only: nothing is read.
    addr_of!(__edevice) as usize - addr_of!(__sdevice) as usize
}
