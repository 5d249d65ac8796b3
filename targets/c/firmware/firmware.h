/* What the C firmware image's files share: output over semihosting, the stack figures. */
#ifndef FIRMWARE_H
#define FIRMWARE_H

#include <stdint.h>

/* cortex-m-rt's paint value, as the Rust image uses. */
#define STACK_PAINT 0xCCCCCCCCu

void out_str(const char *s);
void out_u64(uint64_t v);
void out_hex64(uint64_t v);
void out_bytes(const uint8_t *s, uint32_t len);
__attribute__((noreturn)) void exit_with(int success);
uint32_t stack_region(void);
uint32_t stack_peak(void);

#endif
