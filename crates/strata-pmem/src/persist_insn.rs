//! The cache-line write-back and fence instructions (DESIGN.md section 1),
//! chosen once at run time by CPUID: `clwb`, else `clflushopt`, else `clflush`.
//! std has intrinsics for `clflush` and `sfence` only, so the other two are
//! inline assembly.

use std::sync::OnceLock;

/// Which write-back instruction this CPU uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlushInstruction {
    Clwb,
    Clflushopt,
    Clflush,
    /// Not x86-64: no user-space write-back; fences are `SeqCst` fences.
    None,
}

impl FlushInstruction {
    pub fn name(self) -> &'static str {
        match self {
            FlushInstruction::Clwb => "clwb",
            FlushInstruction::Clflushopt => "clflushopt",
            FlushInstruction::Clflush => "clflush",
            FlushInstruction::None => "none",
        }
    }
}

static DETECTED: OnceLock<FlushInstruction> = OnceLock::new();

/// The instruction CPUID says is best on this machine (cached).
pub fn detected_flush_instruction() -> FlushInstruction {
    *DETECTED.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> FlushInstruction {
    use std::arch::x86_64::__cpuid_count;
    // CPUID is safe on every x86-64 CPU; leaf 7 sub-leaf 0 is meaningful when
    // the maximum basic leaf (leaf 0, EAX) is at least 7.
    let max_leaf = __cpuid_count(0, 0).eax;
    if max_leaf >= 7 {
        let ebx = __cpuid_count(7, 0).ebx;
        if ebx & (1 << 24) != 0 {
            return FlushInstruction::Clwb;
        }
        if ebx & (1 << 23) != 0 {
            return FlushInstruction::Clflushopt;
        }
    }
    FlushInstruction::Clflush
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> FlushInstruction {
    FlushInstruction::None
}

/// Writes back the cache line containing `addr`.
#[inline]
pub(crate) fn flush_line(insn: FlushInstruction, addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller passes an address inside a live mapping (the region
    // bounds-checks every range before flushing). The write-back instructions
    // do not modify memory contents, and `insn` was chosen by CPUID so the CPU
    // supports it.
    unsafe {
        match insn {
            FlushInstruction::Clwb => {
                std::arch::asm!("clwb [{0}]", in(reg) addr, options(nostack, preserves_flags))
            }
            FlushInstruction::Clflushopt => {
                std::arch::asm!("clflushopt [{0}]", in(reg) addr, options(nostack, preserves_flags))
            }
            FlushInstruction::Clflush => std::arch::x86_64::_mm_clflush(addr),
            FlushInstruction::None => {}
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (insn, addr);
    }
}

/// Store fence: orders every earlier write-back before later stores.
#[inline]
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no memory operands and is available on every x86-64 CPU.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_stable_and_flush_runs() {
        let insn = detected_flush_instruction();
        assert_eq!(insn, detected_flush_instruction());
        let data = [7u8; 128];
        flush_line(insn, data.as_ptr());
        store_fence();
        assert_eq!(data[0], 7, "write-back must not change memory");
    }
}
