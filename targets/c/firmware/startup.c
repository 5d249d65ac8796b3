/* Reset and fault handling of the C firmware image, and its output: semihosting, as the Rust
 * image's (cortex-m-rt with paint-stack, cortex-m-semihosting). No C library runtime: the
 * image links newlib only for memcpy and friends. */
#include <stdint.h>

#include "firmware.h"

extern uint32_t __sdata, __edata, __sidata, __sbss, __ebss, _stack_end, _stack_start;

int main(void);

/* ARM semihosting: operation in r0, argument in r1, `bkpt 0xab`. */
static int semihost(int op, const void *arg) {
  register int r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void out_str(const char *s) { semihost(0x04 /* SYS_WRITE0 */, s); }

void out_u64(uint64_t v) {
  char buf[21];
  char *p = buf + sizeof buf - 1;
  *p = 0;
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  out_str(p);
}

void out_hex64(uint64_t v) {
  char buf[17];
  for (int i = 15; i >= 0; i--, v >>= 4) buf[i] = "0123456789abcdef"[v & 15];
  buf[16] = 0;
  out_str(buf);
}

void out_bytes(const uint8_t *s, uint32_t len) {
  char chunk[65];
  while (len) {
    uint32_t n = len < 64 ? len : 64;
    for (uint32_t i = 0; i < n; i++) chunk[i] = (char)s[i];
    chunk[n] = 0;
    out_str(chunk);
    s += n;
    len -= n;
  }
}

void exit_with(int success) {
  /* ADP_Stopped_ApplicationExit (QEMU exits 0) or ADP_Stopped_RunTimeErrorUnknown (exits 1). */
  semihost(0x18 /* SYS_EXIT */, (const void *)(uintptr_t)(success ? 0x20026 : 0x20023));
  for (;;) {
  }
}

/* The static library's last guard (its panic handler calls `abort`), and compiler-rt's. */
void abort(void) {
  out_str("abort: firmware: 0 passed, 1 failed\n");
  exit_with(0);
}
void __compilerrt_abort_impl(const char *file, int line, const char *function) {
  (void)file, (void)line, (void)function;
  abort();
}

/* The fault's stacked frame: r0-r3, r12, lr, pc, xpsr. */
__attribute__((used)) static void hard_fault_report(const uint32_t *frame) {
  out_str("HardFault at pc 0x");
  out_hex64(frame[6]);
  out_str(" (lr 0x");
  out_hex64(frame[5]);
  out_str("): firmware: 0 passed, 1 failed\n");
  exit_with(0);
}

__attribute__((naked)) static void hard_fault(void) {
  __asm__ volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b hard_fault_report");
}

void reset_handler(void) {
  /* The FPU (CP10, CP11): the library is built for thumbv7em-none-eabihf. */
  *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
  for (uint32_t *src = &__sidata, *dst = &__sdata; dst < &__edata;) *dst++ = *src++;
  for (uint32_t *dst = &__sbss; dst < &__ebss;) *dst++ = 0;
  /* Paint the stack below this frame, for the high-water mark (stack_peak). */
  uint32_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = &_stack_end; (uintptr_t)p < sp - 64; p++) *(volatile uint32_t *)p = STACK_PAINT;
  exit_with(main() == 0);
}

uint32_t stack_region(void) { return (uint32_t)((uintptr_t)&_stack_start - (uintptr_t)&_stack_end); }

uint32_t stack_peak(void) {
  const volatile uint32_t *p = &_stack_end;
  uint32_t words = stack_region() / 4, untouched = 0;
  while (untouched < words && p[untouched] == STACK_PAINT) untouched++;
  return stack_region() - untouched * 4;
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&_stack_start), reset_handler, hard_fault, hard_fault, hard_fault, hard_fault, hard_fault,
};
