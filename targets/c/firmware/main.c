/* A Cortex-M4 firmware image in C that embeds the neff core through its C ABI (neff.h,
 * libneff_ffi.a for thumbv7em), run under QEMU: the C counterpart of targets/qemu-m4.
 *
 * It loads the same NEFFs as the Rust image (both nkipy files, a bf16 trainium-kernel-fusion
 * one and the generated big model, all in flash) within the same linked RAM budget
 * (memory.ld: 127 KiB stack above unmapped memory + 1 KiB statics), onto a digest-only device
 * written here: a 64 GiB address space that stores no byte, only each region's XXH3-64 (xxhash.h), plus a
 * notebook it lends the loader. Every payload's landed length and digest, as the loader
 * reports it and as the device computed it, must equal what gen_fixtures computed on the host
 * (zlib + a tar walk + libxxhash), and the header hash check must report the payload's MD5
 * (Python's hashlib, in scripts/test-c-firmware.sh). It prints the Rust image's summary lines
 * (the script compares them), then its RAM figures; the last line is
 * `firmware: N passed, M failed`. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "firmware.h"
#include "fixtures.h"
#include "neff.h"

/* As the Rust image: the arena's records (36 KiB: the I/O join of a real training NEFF's 1,312
 * tensors takes 36,479 bytes) after the string scratch (1 KiB on thumbv7em), region records, the
 * notebook (1 MiB: a 28-byte note a landed payload from its start, the DMA references waiting for
 * their def.json from its end, 410,787 bytes in the largest real NEFF here), the checker's table,
 * the JSON buffer. */
#define RECORD_BYTES (36u * 1024u)
#define STRING_SCRATCH 1024u
#define ARENA_BYTES (STRING_SCRATCH + RECORD_BYTES)
#define REGIONS 704u
#define NOTEBOOK (1024u * 1024u)
#define CHECKED_PAYLOADS 640u
#define JSON_CAPACITY 1024u
#define RAM_TARGET (128u * 1024u)
#define DEVICE_CAPACITY (64ull << 30)

/* ---- the device (its tables in .device: the accelerator's side, outside the budget) ---- */

typedef struct region {
  uint64_t address, size, written, digest;
  bool live;
} region;

#define DEVICE_SECTION(name) __attribute__((section(".device." name)))
DEVICE_SECTION("regions") static region regions[REGIONS];
DEVICE_SECTION("notebook") static uint8_t notebook[NOTEBOOK];
DEVICE_SECTION("seen") static uint32_t seen[CHECKED_PAYLOADS];
DEVICE_SECTION("stream") __attribute__((aligned(64))) static XXH3_state_t stream;

typedef struct device {
  uint32_t arch;       /* neff_arch: the NEFF's own target */
  uint32_t count;      /* region records used */
  uint64_t next;       /* the bump allocator's next address */
  int32_t streaming;   /* the region whose digest `stream` holds, or -1 */
} device;

static region *live(device *d, uint32_t id) {
  return id < d->count && regions[id].live ? &regions[id] : NULL;
}

static uint32_t record(device *d, const neff_alloc_request *req, const uint64_t *at, uint32_t *id) {
  if (req->size == 0) return NEFF_HAL_ZERO_SIZE;
  if (req->align == 0 || (req->align & (req->align - 1))) return NEFF_HAL_BAD_ALIGNMENT;
  if (d->count == REGIONS) return NEFF_HAL_REGION_TABLE_FULL;
  uint64_t address = at ? *at : (d->next + req->align - 1) & ~(req->align - 1);
  if (!at) {
    if (address > DEVICE_CAPACITY || req->size > DEVICE_CAPACITY - address) return NEFF_HAL_OUT_OF_MEMORY;
    d->next = address + req->size;
  }
  regions[d->count] = (region){address, req->size, 0, 0, true};
  *id = d->count++;
  return NEFF_HAL_OK;
}

static uint32_t dev_arch(void *ctx) { return ((device *)ctx)->arch; }

static uint32_t dev_alloc(void *ctx, const neff_alloc_request *req, uint32_t *id) { return record(ctx, req, NULL, id); }

static uint32_t dev_write(void *ctx, uint32_t id, uint64_t offset, const uint8_t *bytes, size_t len) {
  device *d = ctx;
  region *r = live(d, id);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  if (offset != r->written) return NEFF_HAL_OUT_OF_ORDER_WRITE;
  if (len > r->size - offset) return NEFF_HAL_OUT_OF_BOUNDS;
  if (d->streaming != (int32_t)id) {
    if (offset != 0) return NEFF_HAL_OUT_OF_ORDER_WRITE;
    XXH3_64bits_reset(&stream);
    d->streaming = (int32_t)id;
  }
  XXH3_64bits_update(&stream, bytes, len);
  r->digest = XXH3_64bits_digest(&stream);
  r->written += len;
  return NEFF_HAL_OK;
}

static uint32_t dev_adopt(void *ctx, uint32_t staged, const neff_alloc_request *req, uint32_t *id) {
  device *d = ctx;
  region *old = live(d, staged);
  if (!old) return NEFF_HAL_UNKNOWN_REGION;
  if (req->size < old->size) return NEFF_HAL_ADOPT_TOO_SMALL;
  bool in_place = req->size == old->size && req->align && old->address % req->align == 0;
  uint32_t rc = record(d, req, in_place ? &old->address : NULL, id);
  if (rc != NEFF_HAL_OK) return rc;
  old = &regions[staged];
  regions[*id].written = old->written;
  regions[*id].digest = old->digest;
  old->live = false;
  if (d->streaming == (int32_t)staged) d->streaming = -1;
  return NEFF_HAL_OK;
}

static uint32_t dev_release(void *ctx, uint32_t id) {
  device *d = ctx;
  region *r = live(d, id);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  r->live = false;
  if (d->streaming == (int32_t)id) d->streaming = -1;
  return NEFF_HAL_OK;
}

static uint32_t dev_address(void *ctx, uint32_t id, uint64_t *address) {
  region *r = live(ctx, id);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  *address = r->address;
  return NEFF_HAL_OK;
}

static uint32_t dev_note(void *ctx, uint64_t at, const uint8_t *bytes, size_t len) {
  (void)ctx;
  if (at > NOTEBOOK || len > NOTEBOOK - at) return NEFF_HAL_OUT_OF_BOUNDS;
  memcpy(notebook + at, bytes, len);
  return NEFF_HAL_OK;
}

static uint32_t dev_recall(void *ctx, uint64_t at, uint8_t *out, size_t len) {
  (void)ctx;
  if (at > NOTEBOOK || len > NOTEBOOK - at) return NEFF_HAL_OUT_OF_BOUNDS;
  memcpy(out, notebook + at, len);
  return NEFF_HAL_OK;
}

/* ---- the checker: each payload as the loader reports it ---- */

typedef struct checker {
  const fixture *f;
  uint32_t reported, warnings;
  bool failed;
  /* The runtime's tables, counted: I/O tensors, subgraphs' tables, KELF-node debug lines. */
  uint32_t tensors, subgraphs, kelf_nodes;
} checker;

static void fail_prefix(const fixture *f) {
  out_str(f->name);
  out_str(": FAILED: ");
}

static bool same_name(const char *want, const uint8_t *got, size_t len) {
  return strlen(want) == len && memcmp(want, got, len) == 0;
}

static void on_payload(void *ctx, const neff_payload *p) {
  checker *c = ctx;
  if (c->failed) return;
  const fixture *f = c->f;
  uint32_t i = 0;
  while (i < f->payload_count && !same_name(f->payloads[i].member, p->member, p->member_len)) i++;
  const char *why = NULL;
  if (i == f->payload_count) {
    why = "a payload gen_fixtures does not know: ";
  } else if (p->state != NEFF_PAYLOAD_PLACED) {
    why = "not placed: ";
  } else if (p->len != f->payloads[i].len) {
    why = "landed length differs: ";
  } else if (p->digest != f->payloads[i].digest) {
    why = "reported digest differs: ";
  } else if (i >= CHECKED_PAYLOADS) {
    why = "more payloads than the checker follows: ";
  } else if (seen[i]) {
    why = "reported twice: ";
  }
  if (why) {
    fail_prefix(f);
    out_str(why);
    out_bytes(p->member, (uint32_t)p->member_len);
    out_str("\n");
    c->failed = true;
    return;
  }
  seen[i] = p->has_region ? p->region + 1 : UINT32_MAX;
  c->reported++;
}

/* A warning by its stable code, stage and place: the image calls no neff_*_message, so the
 * core's message formatting (core::fmt) is not linked (a host decodes the code). */
/* The table callbacks count (flash is short: the host program checks their contents). */
static void on_io_tensor(void *ctx, const neff_io_tensor *t) {
  checker *c = ctx;
  c->tensors += t->info->ndim <= 32;
}

static void on_subgraph_tables(void *ctx, const neff_subgraph_tables *t) {
  checker *c = ctx;
  c->subgraphs += t->mla_tail != NULL;
}

static void on_debug(void *ctx, const neff_debug_line *l) {
  checker *c = ctx;
  c->kelf_nodes += l->kind == NEFF_DEBUG_KELF_NODE;
}

static void on_warning(void *ctx, const neff_warning *w) {
  checker *c = ctx;
  out_str(c->f->name);
  out_str(": warning ");
  out_u64(w->code);
  out_str(" (stage ");
  out_u64(w->stage);
  out_str("): ");
  out_bytes(w->member, (uint32_t)w->member_len);
  out_str(": ");
  out_bytes(w->key_path, (uint32_t)w->key_path_len);
  out_str(" (offset ");
  out_u64(w->offset);
  out_str(")\n");
  c->warnings++;
}

/* ---- one NEFF ---- */

/* What failed, by the error's accessors: status, stage, stable code (neff_codes.h), member, key
 * path and offset. No neff_error_message: the core's message formatting stays out of flash. */
__attribute__((noinline)) static void print_error(const fixture *f, const neff_error *err) {
  size_t member_len = 0, key_path_len = 0;
  const uint8_t *member = neff_error_member(err, &member_len);
  const uint8_t *key_path = neff_error_key_path(err, &key_path_len);
  fail_prefix(f);
  out_str("load error: status ");
  out_u64(neff_error_status(err));
  out_str(", stage ");
  out_u64(neff_error_stage(err));
  out_str(", code ");
  out_u64(neff_error_kind(err));
  out_str(", member ");
  out_bytes(member, (uint32_t)member_len);
  out_str(", key path ");
  out_bytes(key_path, (uint32_t)key_path_len);
  out_str(", offset ");
  out_u64(neff_error_offset(err));
  out_str("\n");
}

/* Compares what landed with what gen_fixtures computed; NULL when all holds. */
static const char *check(const fixture *f, const neff_report *r, const checker *c) {
  if (r->members != f->members) return "tar member count differs";
  if (r->inflated_bytes != f->inflated_bytes) return "inflated length differs";
  if (r->integrity != NEFF_INTEGRITY_MATCH || r->integrity_order != f->md5_order || r->computed_hash_len != 16 ||
      memcmp(r->computed_hash, f->md5, 16) != 0)
    return "header hash: not the expected MD5 match";
  if (c->reported != f->payload_count) return "payload count differs";
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < f->payload_count; i++) {
    uint32_t s = seen[i];
    if (s == 0) return "an expected payload was not reported";
    if (s == UINT32_MAX || s - 1 >= REGIONS || !regions[s - 1].live) return "a payload has no device region";
    if (regions[s - 1].digest != f->payloads[i].digest) return "the device's digest differs";
    bytes += f->payloads[i].len;
  }
  if (r->bytes_placed != bytes) return "bytes placed differ from the payloads'";
  if (c->tensors != r->inputs + r->outputs || c->subgraphs != r->subgraphs || c->kelf_nodes == 0)
    return "tables observed differ from the report";
  return NULL;
}

static const char *order_name(uint32_t order) {
  return order == NEFF_ORDER_PLAIN ? "plain" : order == NEFF_ORDER_WORD_SWAPPED ? "word-swapped" : "none";
}

/* The lines of a NEFF that passed: the Rust image's, word for word. */
__attribute__((noinline)) static void print_ok(const fixture *f, const neff_report *r, const uint8_t *json,
                                               size_t json_len) {
  out_str(f->name);
  out_str(": summary (");
  out_u64(json_len);
  out_str(" bytes of JSON): ");
  out_bytes(json, (uint32_t)json_len);
  out_str("\n");
  out_str(f->name);
  out_str(": OK: ");
  out_u64(r->members);
  out_str(" members, ");
  out_u64(r->placed);
  out_str(" payloads placed, ");
  out_u64(r->bytes_placed);
  out_str(" bytes placed, ");
  out_u64(f->payload_count);
  out_str(" digests checked (report and device), header MD5 match (");
  out_str(order_name(r->integrity_order));
  out_str("), ");
  out_u64(r->warnings);
  out_str(" warnings, arena ");
  out_u64(r->arena_peak);
  out_str(" of ");
  out_u64(RECORD_BYTES);
  out_str(" bytes\n");
}

/* The stack pointer at the call of neff_load (the same for every NEFF). */
static uint32_t sp_at_load;

/* Loads one NEFF from flash and checks it. The arena is the library's own
 * (NEFF_FFI_BUILTIN_ARENA=ARENA_BYTES when scripts/test-c-firmware.sh builds it): a local of the
 * library's load frame, entered once the archive is open, as the Rust image's arena is a local
 * of a frame entered after its open. A lent one would be live during the open too. */
__attribute__((noinline)) static bool run(const fixture *f, neff_error *err) {
  device dev = {f->arch, 0, 0, -1};
  memset(seen, 0, sizeof seen);
  neff_buffers bufs = {NULL, 0, NULL, 0};
  neff_source src = {f->start, (size_t)(f->end - f->start), NULL, NULL, NULL, 0, 0};
  neff_hal hal = {&dev, dev_arch, dev_alloc, dev_write, dev_adopt, dev_release, dev_address,
                  NOTEBOOK, dev_note, dev_recall};
  neff_options opts = {.verify_integrity = true};
  checker c = {f, 0, 0, false, 0, 0, 0};
  neff_observer obs = {.ctx = &c, .payload = on_payload, .warning = on_warning, .io_tensor = on_io_tensor,
                       .subgraph_tables = on_subgraph_tables, .debug = on_debug};
  neff_report report;
  uint8_t json[JSON_CAPACITY];
  size_t json_len = 0;
  neff_outputs out = {&report, json, sizeof json, &json_len};
  /* Where the library's frames start: what the stack's high-water mark lies below of it is the
   * library's own use, which neff_load_stack_size() must cover. */
  __asm__ volatile("mov %0, sp" : "=r"(sp_at_load));
  neff_status status = neff_load(&src, &hal, &bufs, &opts, &obs, &out, err);
  if (status != NEFF_STATUS_OK) return false;
  if (c.failed) return false;
  const char *why = check(f, &report, &c);
  if (why) {
    fail_prefix(f);
    out_str(why);
    out_str("\n");
    return false;
  }
  print_ok(f, &report, json, json_len);
  return true;
}

extern uint32_t __sdata, __ebss, _stack_end, _stack_start, _ram_budget_end, __sdevice, __edevice;

int main(void) {
  out_str("neff C firmware: Cortex-M4 (thumbv7em-none-eabihf, arm-none-eabi-gcc, libneff_ffi.a), ");
  out_u64(fixture_count);
  out_str(" NEFFs embedded\nsizes: neff_load_stack_size ");
  out_u64(neff_load_stack_size());
  out_str("; arena ");
  out_u64(ARENA_BYTES);
  out_str(" (string scratch ");
  out_u64(neff_arena_min());
  out_str(" + records ");
  out_u64(RECORD_BYTES);
  out_str("); neff_error ");
  out_u64(sizeof(neff_error));
  out_str("; JSON buffer ");
  out_u64(JSON_CAPACITY);
  out_str("\n");
  uint32_t passed = 0, failed = 0;
  if (neff_arena_min() != STRING_SCRATCH || neff_builtin_arena_size() != ARENA_BYTES) {
    out_str("FAILED: the library's arena is not the one this image assumes (NEFF_FFI_BUILTIN_ARENA)\n");
    failed++;
  }
  static neff_error err; /* in the statics: 320 bytes, out of every load's frame */
  for (uint32_t i = 0; i < fixture_count; i++) {
    if (run(fixtures[i], &err)) {
      passed++;
    } else {
      if (neff_error_status(&err) != NEFF_STATUS_OK) print_error(fixtures[i], &err);
      failed++;
    }
  }
  uint32_t statics = (uint32_t)((uintptr_t)&__ebss - (uintptr_t)&__sdata);
  uint32_t peak = stack_peak(), used = statics + peak;
  uint32_t budget = (uint32_t)((uintptr_t)&_ram_budget_end - (uintptr_t)&_stack_end);
  out_str("RAM: statics ");
  out_u64(statics);
  out_str(" + peak stack ");
  out_u64(peak);
  out_str(" = ");
  out_u64(used);
  out_str(" bytes; linked budget ");
  out_u64(budget);
  out_str(" (stack region ");
  out_u64(stack_region());
  out_str("); target ");
  out_u64(RAM_TARGET);
  out_str(used <= RAM_TARGET ? ": within\n" : ": EXCEEDED (see memory.ld)\n");
  out_str("device side (not controller RAM, outside the budget): ");
  out_u64((uintptr_t)&__edevice - (uintptr_t)&__sdevice);
  out_str(" bytes\n");
  if (peak >= stack_region()) {
    out_str("FAILED: the stack used its whole region\n");
    failed++;
  }
  /* The library's share of the peak: from the stack pointer at its call down to the lowest
   * byte any load wrote (the loads run deeper than anything else of this image). */
  uint32_t lowest = (uint32_t)(uintptr_t)&_stack_start - peak;
  uint32_t load_used = sp_at_load - lowest;
  out_str("neff_load: ");
  out_u64(load_used);
  out_str(" bytes of stack used below its call, neff_load_stack_size() ");
  out_u64(neff_load_stack_size());
  if (load_used > neff_load_stack_size() || neff_load_stack_size() - load_used >= 4096) {
    out_str(": FAILED (the figure must cover the use, within a page)\n");
    failed++;
  } else {
    out_str(": within\n");
  }
  out_str("firmware: ");
  out_u64(passed);
  out_str(" passed, ");
  out_u64(failed);
  out_str(" failed\n");
  return failed == 0 ? 0 : 1;
}
