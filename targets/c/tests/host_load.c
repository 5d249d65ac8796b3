/* The C side of the neff C ABI, on the host: loads each NEFF named on the command line into a
 * simulated device written here in C (it keeps every region's bytes), through both byte
 * sources (memory, and a read callback over the file), and checks every payload against an
 * independent computation: zlib gunzips the NEFF's payload, a tar walk written here finds each
 * member, and xxhash's own XXH3-64 (libxxhash, seed 0) digests the bytes that must land (a
 * `.npy` member's array data only). Then it damages a NEFF and checks the refusal: status,
 * stage, kind and message. Before the loads: neff_init and the names (identity), and every
 * ordered pair of lent buffers made to overlap in neff_check, neff_load and neff_info, each
 * refused with nothing written (overlaps). Among the refusals: a JSON report too long for a
 * 16-byte buffer undoes the load (no region live), a read callback's -EIO reaches the error,
 * and a data_size past the end is at byte 16 from memory and through a callback alike.
 *
 * Built by scripts/test-ffi.sh with the system cc, -fsanitize=address,undefined, against the
 * installed static library (scripts/install-c.sh: libneff.a, only neff_* global), then with
 * pkg-config against the shared one. Exit status 0 only when every check passed; the last line
 * is `c host: N passed, M failed`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "neff.h"
#include "tarwalk.h"

/* neff_arch values (the schema's `Arch`). */
#define ARCH_CAYMAN 3

static int failures;

static void fail(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stdout, "%s: FAILED: ", name);
  vfprintf(stdout, fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  failures++;
}

/* ---- the simulated device, in C: every region's bytes ---- */

typedef struct region {
  uint8_t *bytes;
  uint64_t size;
  int live;
} region;

typedef struct device {
  region *regions; /* index = id - 1 */
  uint32_t count, cap;
  uint32_t live;
  uint32_t alloc_limit; /* refuse allocations past this many (0: no limit) */
} device;

static neff_arch dev_arch(void *ctx) {
  (void)ctx;
  return ARCH_CAYMAN;
}

static neff_hal_result new_region(device *d, uint64_t size, uint32_t *id) {
  if (size == 0) return NEFF_HAL_ZERO_SIZE;
  if (size > ((uint64_t)1 << 32)) return NEFF_HAL_OUT_OF_MEMORY;
  if (d->count == d->cap) {
    uint32_t cap = d->cap ? d->cap * 2 : 64;
    region *grown = realloc(d->regions, cap * sizeof(region));
    if (!grown) return NEFF_HAL_REGION_TABLE_FULL;
    d->regions = grown;
    d->cap = cap;
  }
  uint8_t *bytes = calloc(1, (size_t)size);
  if (!bytes) return NEFF_HAL_OUT_OF_MEMORY;
  d->regions[d->count] = (region){bytes, size, 1};
  *id = ++d->count;
  d->live++;
  return NEFF_HAL_OK;
}

static region *live_region(device *d, uint32_t id) {
  if (id == 0 || id > d->count || !d->regions[id - 1].live) return NULL;
  return &d->regions[id - 1];
}

static neff_hal_result dev_alloc(void *ctx, const neff_alloc_request *req, uint32_t *id) {
  device *d = ctx;
  if (d->alloc_limit && d->count >= d->alloc_limit) return NEFF_HAL_OUT_OF_MEMORY;
  if (req->align == 0 || (req->align & (req->align - 1))) return NEFF_HAL_BAD_ALIGNMENT;
  return new_region(ctx, req->size, id);
}

static neff_hal_result dev_write(void *ctx, uint32_t id, uint64_t offset, const uint8_t *bytes, size_t len) {
  region *r = live_region(ctx, id);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  if (offset > r->size || len > r->size - offset) return NEFF_HAL_OUT_OF_BOUNDS;
  memcpy(r->bytes + offset, bytes, len);
  return NEFF_HAL_OK;
}

static neff_hal_result dev_release(void *ctx, uint32_t id) {
  device *d = ctx;
  region *r = live_region(d, id);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  free(r->bytes);
  r->bytes = NULL;
  r->live = 0;
  d->live--;
  return NEFF_HAL_OK;
}

static neff_hal_result dev_adopt(void *ctx, uint32_t staged, const neff_alloc_request *req, uint32_t *id) {
  device *d = ctx;
  region *r = live_region(d, staged);
  if (!r) return NEFF_HAL_UNKNOWN_REGION;
  if (req->size < r->size) return NEFF_HAL_ADOPT_TOO_SMALL;
  neff_hal_result rc = dev_alloc(ctx, req, id);
  if (rc != NEFF_HAL_OK) return rc;
  r = live_region(d, staged); /* the table may have moved */
  memcpy(d->regions[*id - 1].bytes, r->bytes, (size_t)r->size);
  return dev_release(ctx, staged);
}

static void dev_free(device *d) {
  for (uint32_t i = 0; i < d->count; i++) free(d->regions[i].bytes);
  free(d->regions);
  memset(d, 0, sizeof *d);
}

/* ---- the observer: checks each payload as it is reported ---- */

typedef struct checker {
  const char *name;
  const tarball *tar;
  device *dev;
  uint32_t payloads, placed, warnings;
  uint64_t bytes;
} checker;

static void on_payload(void *ctx, const neff_payload *p) {
  checker *c = ctx;
  c->payloads++;
  const member *m = find_member(c->tar, (const char *)p->member, p->member_len);
  if (!m) {
    fail(c->name, "%.*s: reported, but not in the tar", (int)p->member_len, (const char *)p->member);
    return;
  }
  if (p->state != NEFF_PAYLOAD_PLACED && p->state != NEFF_PAYLOAD_CHECKED) return;
  const uint8_t *want;
  uint64_t want_len;
  landing_bytes(m, &want, &want_len);
  uint64_t want_digest = XXH3_64bits(want, (size_t)want_len);
  if (p->len != want_len) fail(c->name, "%s: %llu bytes landed, expected %llu", m->name, (unsigned long long)p->len,
                                (unsigned long long)want_len);
  if (p->digest != want_digest) fail(c->name, "%s: reported digest %016llx, expected %016llx", m->name,
                                     (unsigned long long)p->digest, (unsigned long long)want_digest);
  if (c->dev && p->state == NEFF_PAYLOAD_PLACED) {
    region *r = p->has_region ? live_region(c->dev, p->region) : NULL;
    if (!r || r->size < p->len) {
      fail(c->name, "%s: no region holding it", m->name);
    } else if (XXH3_64bits(r->bytes, (size_t)p->len) != want_digest) {
      fail(c->name, "%s: the device's bytes differ", m->name);
    }
  }
  c->placed++;
  c->bytes += p->len;
}

static void on_warning(void *ctx, const neff_warning *w) {
  checker *c = ctx;
  uint8_t msg[256];
  neff_warning_message(w, msg, sizeof msg);
  printf("%s: warning %u: %s\n", c->name, (unsigned)w->code, (const char *)msg);
  c->warnings++;
}

/* ---- the runtime's tables: each callback writes one line (tab-separated) ---- */

/* The lines of one pass, growing; the members each names must be in the tar. */
typedef struct tables {
  const char *name;
  const tarball *tar;
  char *text;
  size_t len, cap;
  uint32_t tensors, subgraphs, kelf_nodes;
} tables;

/* What a pass's observer ctx points to: the payloads' checker first (on_payload and
 * on_warning take the ctx as a checker *), then the tables. */
typedef struct observed {
  checker c;
  tables t;
} observed;

#define TABLES(ctx) (&((observed *)(ctx))->t)

static void line(tables *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = (t->cap + (size_t)n + 1) * 2;
    char *grown = realloc(t->text, cap);
    if (!grown) return;
    t->text = grown;
    t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->text + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

static void in_tar(tables *t, const char *what, const uint8_t *member, size_t len) {
  if (!find_member(t->tar, (const char *)member, len))
    fail(t->name, "%s names %.*s, which is not in the tar", what, (int)len, (const char *)member);
}

static void on_io_tensor(void *ctx, const neff_io_tensor *x) {
  tables *t = TABLES(ctx);
  const io_node_info_t *info = x->info;
  t->tensors++;
  if (info->ndim > 32) {
    fail(t->name, "%.*s: io_node_info_t.ndim %u", (int)x->name_len, (const char *)x->name, info->ndim);
    return;
  }
  for (uint32_t d = info->ndim; d < 32; d++)
    if (info->shape[d] != 0) fail(t->name, "%.*s: unused dimension %u is %u", (int)x->name_len, (const char *)x->name, d, info->shape[d]);
  line(t, "tensor\t%s\t%u\t%.*s\t%.*s\t%u\t%llu\t", x->kind == NEFF_IO_INPUT ? "input" : "output", x->index,
       (int)x->name_len, (const char *)x->name, (int)x->dtype_len, (const char *)x->dtype, info->dtype,
       (unsigned long long)info->size);
  for (uint32_t d = 0; d < info->ndim; d++) line(t, d ? ",%u" : "%u", info->shape[d]);
  line(t, "\n");
}

static void on_dma_queue(void *ctx, const neff_dma_queue *q) {
  tables *t = TABLES(ctx);
  in_tar(t, "a DMA queue", q->member, q->member_len);
  line(t, "queue\t%.*s\t%.*s\t%u\t%u\n", (int)q->member_len, (const char *)q->member, (int)q->name_len,
       (const char *)q->name, q->queue->queue_set_cnt, q->queue->semaphore_cnt);
}

static void on_carveout(void *ctx, const neff_carveout *c) {
  tables *t = TABLES(ctx);
  in_tar(t, "a carveout", c->member, c->member_len);
  line(t, "carveout\t%.*s\t%u\t%u\t%llu\t%llu\n", (int)c->member_len, (const char *)c->member, c->index,
       c->carveout->carveout_type, (unsigned long long)c->carveout->offset, (unsigned long long)c->carveout->size);
}

static void on_subgraph_tables(void *ctx, const neff_subgraph_tables *s) {
  tables *t = TABLES(ctx);
  t->subgraphs++;
  in_tar(t, "a subgraph's tables", s->member, s->member_len);
  const mla_resources_tail_t *tail = s->mla_tail;
  if (!tail) {
    fail(t->name, "%.*s: no mla_resources tail", (int)s->member_len, (const char *)s->member);
    return;
  }
  /* The tail holds the same fp8 config, and CCSTMI is num_streams as read (0 when absent,
   * where kbin_cc_streams_t says 1). */
  if (memcmp(&tail->fp8_conv_cfg, s->fp8, sizeof *s->fp8) != 0) fail(t->name, "the tail's fp8 config differs");
  if (tail->ccstmi != s->cc_streams->num_streams && !(tail->ccstmi == 0 && s->cc_streams->num_streams == 1))
    fail(t->name, "CCSTMI %u, num_streams %u", tail->ccstmi, s->cc_streams->num_streams);
  line(t, "subgraph\t%.*s\t%u\t%u\t%u\t%d\n", (int)s->member_len, (const char *)s->member, tail->num_inputs,
       tail->num_outputs, s->cc_streams->num_streams, s->mem_ref_set ? (int)s->mem_ref_set->nmem : -1);
}

static void on_debug(void *ctx, const neff_debug_line *l) {
  tables *t = TABLES(ctx);
  if (l->kind != NEFF_DEBUG_KELF_NODE) {
    fail(t->name, "debug line of kind %u", (unsigned)l->kind);
    return;
  }
  t->kelf_nodes++;
  in_tar(t, "Found KELF node", l->subject, l->subject_len);
  line(t, "kelf\t%.*s\n", (int)l->subject_len, (const char *)l->subject);
}

/* ---- the byte-source callback: a FILE * ---- */

/* A failed read returns the negated errno, which reaches neff_error_read_result(). */
static ptrdiff_t file_read(void *ctx, uint8_t *buf, size_t len) {
  size_t n = fread(buf, 1, len, ctx);
  return ferror((FILE *)ctx) ? -(ptrdiff_t)(errno ? errno : EIO) : (ptrdiff_t)n;
}

static void print_error(const char *name, const neff_error *err) {
  char msg[512];
  neff_error_message(err, (uint8_t *)msg, sizeof msg);
  size_t member_len = 0;
  const uint8_t *member = neff_error_member(err, &member_len);
  printf("%s: status %u, stage %u, kind %u, member '%.*s', offset %llu: %s\n", name, (unsigned)neff_error_status(err),
         (unsigned)neff_error_stage(err), (unsigned)neff_error_kind(err), (int)member_len, (const char *)member,
         (unsigned long long)neff_error_offset(err), msg);
}

/* Loads `path` through memory and through the read callback; checks both. 1 if it passed.
 * The runtime's tables the observer gets (the same in the load and the check) are written to
 * `tables_out` if not NULL, for scripts/test-ffi.sh to compare. */
static int load_one(const char *path, const char *tables_out) {
  /* The file and its directory: several fixtures share a file name. */
  const char *name = path;
  for (const char *p = path, *last = NULL; *p; p++) {
    if (*p == '/') {
      if (last) name = last + 1;
      last = p;
    }
  }
  size_t len = 0;
  uint8_t *bytes = read_file(path, &len);
  if (!bytes) {
    fail(name, "cannot read %s: %s", path, strerror(errno));
    return 0;
  }
  tarball tar = {0};
  if (gunzip(bytes, len, &tar) != 0 || walk_tar(&tar) != 0) {
    fail(name, "zlib or the tar walk could not read it");
    free(bytes);
    return 0;
  }
  int before = failures;
  size_t arena_len = neff_arena_min() + 64 * 1024;
  uint8_t *arena = malloc(arena_len);
  neff_buffers bufs = {arena, arena_len, NULL, 0};
  neff_options opts = {.verify_integrity = true};
  neff_error err;
  neff_report report[2];
  uint8_t json[1024];
  size_t json_len = 0;

  /* The tables of the load from memory ([0]) and of the check ([1]); the load through the
   * callback passes an observer of the first release's three members (the rest zero). */
  tables seen[2] = {{name, &tar, NULL, 0, 0, 0, 0, 0}, {name, &tar, NULL, 0, 0, 0, 0, 0}};

  for (int way = 0; way < 2; way++) {
    device dev = {0};
    neff_hal hal = {&dev, dev_arch, dev_alloc, dev_write, dev_adopt, dev_release, NULL, 0, NULL, NULL};
    observed o = {{name, &tar, &dev, 0, 0, 0, 0}, seen[0]};
    neff_observer obs = {.ctx = &o, .payload = on_payload, .warning = on_warning};
    if (way == 0) obs = (neff_observer){&o, on_payload, on_warning, on_io_tensor, on_dma_queue, on_carveout,
                                        on_subgraph_tables, on_debug};
    neff_outputs out = {&report[way], json, sizeof json, &json_len};
    uint8_t buf[509]; /* an odd size: reads cut across every structure */
    FILE *f = NULL;
    neff_source src = {bytes, len, NULL, NULL, NULL, 0, 0};
    if (way == 1) {
      f = fopen(path, "rb");
      src = (neff_source){NULL, 0, file_read, f, buf, sizeof buf, (uint64_t)len};
    }
    neff_status status = neff_load(&src, &hal, &bufs, &opts, &obs, &out, &err);
    if (f) fclose(f);
    checker c = o.c;
    if (way == 0) seen[0] = o.t;
    if (status != NEFF_STATUS_OK) {
      print_error(name, &err);
      fail(name, "load (%s) failed", way ? "callback" : "memory");
    } else {
      uint32_t in_tar = 0;
      for (size_t i = 0; i < tar.count; i++) in_tar += (uint32_t)is_payload(tar.members[i].name);
      if (c.payloads != in_tar) fail(name, "%u payloads reported, the tar holds %u", c.payloads, in_tar);
      if (c.placed != report[way].placed) fail(name, "%u payloads observed, report says %u", c.placed, report[way].placed);
      if (c.bytes != report[way].bytes_placed) fail(name, "observed bytes differ from the report");
      if (report[way].integrity != NEFF_INTEGRITY_MATCH) fail(name, "header hash: integrity %u", report[way].integrity);
      if (dev.live != report[way].placed) fail(name, "%u regions live, %u payloads placed", dev.live, report[way].placed);
      if (json_len == 0 || json[0] != '{' || json[json_len - 1] != '}') fail(name, "no JSON report");
    }
    dev_free(&dev);
  }
  if (memcmp(&report[0], &report[1], sizeof report[0]) != 0) fail(name, "the two byte sources gave different reports");

  /* neff_check: the same payloads and the same tables, no device. */
  observed o = {{name, &tar, NULL, 0, 0, 0, 0}, seen[1]};
  neff_observer obs = {&o, on_payload, on_warning, on_io_tensor, on_dma_queue, on_carveout, on_subgraph_tables, on_debug};
  neff_source src = {bytes, len, NULL, NULL, NULL, 0, 0};
  neff_report checked;
  neff_outputs out = {&checked, NULL, 0, NULL};
  neff_status status = neff_check(&src, &bufs, &opts, &obs, &out, &err);
  seen[1] = o.t;
  if (status != NEFF_STATUS_OK) {
    print_error(name, &err);
    fail(name, "check failed");
  } else if (checked.placed != report[0].placed || checked.bytes_placed != report[0].bytes_placed) {
    fail(name, "check and load disagree");
  } else {
    if (seen[0].len != seen[1].len || (seen[0].len && memcmp(seen[0].text, seen[1].text, seen[0].len) != 0))
      fail(name, "the load's tables differ from the check's");
    if (seen[0].tensors != report[0].inputs + report[0].outputs)
      fail(name, "%u I/O tensors observed, the report says %u inputs, %u outputs", seen[0].tensors, report[0].inputs,
           report[0].outputs);
    if (seen[0].subgraphs != report[0].subgraphs)
      fail(name, "%u subgraphs' tables observed, the report says %u subgraphs", seen[0].subgraphs, report[0].subgraphs);
    if (seen[0].kelf_nodes == 0) fail(name, "no 'Found KELF node' line");
    if (tables_out) {
      FILE *t = fopen(tables_out, "wb");
      if (!t || fwrite(seen[0].text, 1, seen[0].len, t) != seen[0].len) fail(name, "cannot write %s", tables_out);
      if (t) fclose(t);
    }
  }
  free(seen[0].text);
  free(seen[1].text);

  if (failures == before) {
    printf("%s: OK: %u members, %u payloads placed, %llu bytes placed, digests checked (report, device, libxxhash), "
           "header MD5 match, %u warnings, arena %llu bytes; tables: %u I/O tensors, %u subgraphs, %u KELF nodes "
           "(load = check); JSON %.*s\n",
           name, report[0].members, report[0].placed, (unsigned long long)report[0].bytes_placed, report[0].warnings,
           (unsigned long long)report[0].arena_peak, seen[0].tensors, seen[0].subgraphs, seen[0].kelf_nodes,
           (int)json_len, (const char *)json);
  }
  free(arena);
  free(tar.members);
  free(tar.bytes);
  free(bytes);
  return failures == before;
}

/* ---- neff_info ---- */

/* The info document of `bytes`, through the byte source `src`: asked for its size first (a
 * null buffer), then written into a buffer of exactly that size. NULL (after a failure
 * message) if anything went wrong; else the document, its length in *out_len. */
static uint8_t *info_of(const char *name, const neff_source *src, size_t *out_len) {
  size_t arena_len = neff_arena_min() + 256 * 1024, work_len = 64 * 1024;
  uint8_t *arena = malloc(arena_len), *work = malloc(work_len);
  neff_buffers bufs = {arena, arena_len, NULL, 0};
  neff_info_buffers ib = {work, work_len, NULL, 0};
  neff_error err;
  size_t needed = 0, written = 0;
  uint8_t *json = NULL;
  /* A read callback's FILE * is read from its start by each call. */
  if (src->read) rewind((FILE *)src->ctx);
  neff_status status = neff_info(src, &bufs, NULL, NULL, &ib, &needed, &err);
  if (status != NEFF_STATUS_BUFFER_TOO_SMALL || needed == 0 || neff_error_needed(&err) != needed ||
      neff_error_available(&err) != 0) {
    print_error(name, &err);
    fail(name, "info size query: status %u, %zu bytes", (unsigned)status, needed);
    goto out;
  }
  json = malloc(needed);
  ib.json = json;
  ib.json_len = needed;
  if (src->read) rewind((FILE *)src->ctx);
  status = neff_info(src, &bufs, NULL, NULL, &ib, &written, &err);
  if (status != NEFF_STATUS_OK || written != needed || neff_error_status(&err) != NEFF_STATUS_OK) {
    print_error(name, &err);
    fail(name, "info: status %u, %zu of %zu bytes", (unsigned)status, written, needed);
    free(json);
    json = NULL;
  }
out:
  free(work);
  free(arena);
  *out_len = written;
  return json;
}

/* `neff_info` on `path` through memory and through the read callback: the same document both
 * ways, written to `out` (compared with `neff info --json` by scripts/test-ffi.sh). */
static int info_one(const char *path, const char *out) {
  size_t len = 0;
  uint8_t *bytes = read_file(path, &len);
  if (!bytes) {
    fail(path, "cannot read");
    return 0;
  }
  int before = failures;
  neff_source mem = {bytes, len, NULL, NULL, NULL, 0, 0};
  size_t a_len = 0, b_len = 0;
  uint8_t *a = info_of(path, &mem, &a_len);
  FILE *f = fopen(path, "rb");
  uint8_t buf[3000]; /* an odd size: reads end mid-block */
  neff_source cb = {NULL, 0, file_read, f, buf, sizeof buf, (uint64_t)len};
  uint8_t *b = f ? info_of(path, &cb, &b_len) : NULL;
  if (f) fclose(f);
  if (a && b && (a_len != b_len || memcmp(a, b, a_len) != 0)) fail(path, "info differs between memory and callback");
  if (a) {
    FILE *o = fopen(out, "wb");
    if (!o || fwrite(a, 1, a_len, o) != a_len) fail(path, "cannot write %s", out);
    if (o) fclose(o);
  }
  if (failures == before) printf("info %s: %zu bytes of JSON -> %s\n", path, a_len, out);
  free(a);
  free(b);
  free(bytes);
  return failures == before;
}

/* neff_info's refusals on `path`: buffers too small, null pointers, a damaged NEFF. */
static int info_refusals(const char *path) {
  size_t len = 0;
  uint8_t *bytes = read_file(path, &len);
  if (!bytes) {
    fail("info refusals", "cannot read %s", path);
    return 0;
  }
  int before = failures;
  size_t arena_len = neff_arena_min() + 256 * 1024, work_len = 64 * 1024;
  uint8_t *arena = malloc(arena_len), *work = malloc(work_len), json[512];
  neff_buffers bufs = {arena, arena_len, NULL, 0};
  neff_source src = {bytes, len, NULL, NULL, NULL, 0, 0};
  neff_info_buffers ib = {work, work_len, json, sizeof json};
  neff_error err;
  char msg[512];
  size_t written = 1;

  /* 1. An output buffer too small: its own status, the size needed, nothing cut. */
  memset(json, 0xAA, sizeof json);
  neff_status status = neff_info(&src, &bufs, NULL, NULL, &ib, &written, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("info: json too small", &err);
  if (status != NEFF_STATUS_BUFFER_TOO_SMALL || neff_error_stage(&err) != NEFF_STAGE_ARGUMENT ||
      written <= sizeof json || neff_error_needed(&err) != written || neff_error_available(&err) != sizeof json ||
      strncmp(msg, "info.json: ", 11) != 0)
    fail("info: json too small", "status %u, needed %zu", (unsigned)status, written);

  /* 2. A work buffer too small: NRT_RESOURCE naming it, with what it needs; then enough. */
  ib = (neff_info_buffers){work, 64, NULL, 0};
  status = neff_info(&src, &bufs, NULL, NULL, &ib, &written, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("info: work too small", &err);
  size_t work_needed = neff_error_needed(&err);
  if (status != NEFF_STATUS_RESOURCE || work_needed <= 64 || neff_error_available(&err) != 64 ||
      strncmp(msg, "info.work: ", 11) != 0)
    fail("info: work too small", "status %u, needed %zu", (unsigned)status, work_needed);
  ib = (neff_info_buffers){work, work_needed, NULL, 0};
  status = neff_info(&src, &bufs, NULL, NULL, &ib, &written, &err);
  if (status != NEFF_STATUS_BUFFER_TOO_SMALL) fail("info: work as needed", "status %u", (unsigned)status);

  /* 3. Null pointers: the info buffers, a null buffer with a length, overlapping buffers. */
  status = neff_info(&src, &bufs, NULL, NULL, NULL, &written, &err);
  if (status != NEFF_STATUS_BAD_ARGUMENT) fail("info: null info", "status %u", (unsigned)status);
  ib = (neff_info_buffers){work, work_len, NULL, 100};
  status = neff_info(&src, &bufs, NULL, NULL, &ib, &written, &err);
  print_error("info: null json with a length", &err);
  if (status != NEFF_STATUS_BAD_ARGUMENT) fail("info: null json with a length", "status %u", (unsigned)status);
  ib = (neff_info_buffers){arena, work_len, json, sizeof json};
  status = neff_info(&src, &bufs, NULL, NULL, &ib, &written, &err);
  print_error("info: work over the arena", &err);
  if (status != NEFF_STATUS_BAD_ARGUMENT) fail("info: work over the arena", "status %u", (unsigned)status);
  status = neff_info(NULL, &bufs, NULL, NULL, &ib, NULL, NULL);
  if (status != NEFF_STATUS_BAD_ARGUMENT) fail("info: null source", "status %u", (unsigned)status);

  /* 4. A damaged NEFF: the check's refusal, nothing written. */
  uint8_t *damaged = malloc(len);
  memcpy(damaged, bytes, len);
  damaged[1024 + (len - 1024) / 2] ^= 0x55;
  neff_source bad = {damaged, len, NULL, NULL, NULL, 0, 0};
  ib = (neff_info_buffers){work, work_len, json, sizeof json};
  written = 1;
  status = neff_info(&bad, &bufs, NULL, NULL, &ib, &written, &err);
  print_error("info: damaged", &err);
  if (status == NEFF_STATUS_OK || status == NEFF_STATUS_BUFFER_TOO_SMALL || neff_error_status(&err) != status ||
      written != 0)
    fail("info: damaged", "status %u, %zu written", (unsigned)status, written);

  free(damaged);
  free(work);
  free(arena);
  free(bytes);
  if (failures == before) printf("info refusals: OK: json too small, work too small, null pointers, damaged NEFF\n");
  return failures == before;
}


/* ---- the library's identity and names ---- */

static int same(const char *got, const char *want) {
  return got && want ? strcmp(got, want) == 0 : got == want;
}

/* neff_init and neff_version against this header; the names of a status, a stage and codes. */
static int identity(void) {
  int before = failures;
  neff_error err;
  char msg[512];
  if (!same(neff_version(), NEFF_VERSION_STRING)) fail("identity", "library %s, header %s", neff_version(), NEFF_VERSION_STRING);
  if (neff_init(&err) != NEFF_STATUS_OK || neff_error_status(&err) != NEFF_STATUS_OK) fail("identity", "neff_init refused its own header");
  /* A header of the next major version, then one whose neff_error is another size. */
  neff_status status = neff_init_(NEFF_VERSION_MAJOR + 1, NEFF_VERSION_MINOR, sizeof(neff_error), sizeof(neff_report), &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  printf("identity: another major version: %s: %s\n", neff_status_name(status), msg);
  if (status != NEFF_STATUS_VERSION_MISMATCH || neff_error_status(&err) != status || strstr(msg, NEFF_VERSION_STRING) == NULL)
    fail("identity", "another major version: status %u", (unsigned)status);
  status = neff_init_(NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, sizeof(neff_error) - 8, sizeof(neff_report), NULL);
  if (status != NEFF_STATUS_VERSION_MISMATCH) fail("identity", "another sizeof(neff_error): status %u", (unsigned)status);
  if (!same(neff_status_name(NEFF_STATUS_BUFFER_TOO_SMALL), "NEFF_STATUS_BUFFER_TOO_SMALL") ||
      !same(neff_status_name(NEFF_STATUS_OK), "NEFF_STATUS_OK") || neff_status_name((neff_status)3) != NULL)
    fail("identity", "status names");
  if (!same(neff_stage_name(NEFF_STAGE_HEADER), "header") || !same(neff_stage_name(NEFF_STAGE_DEF_JSON), "def.json") ||
      !same(neff_stage_name(NEFF_STAGE_ARGUMENT), "argument") || neff_stage_name((neff_stage)77) != NULL)
    fail("identity", "stage names");
  if (!same(neff_code_name(NEFF_ERR_HEADER_SHORT_FILE), "NEFF_ERR_HEADER_SHORT_FILE") ||
      !same(neff_code_name(NEFF_ERR_MANIFEST_ARCH_MISMATCH), "NEFF_ERR_MANIFEST_ARCH_MISMATCH") ||
      !same(neff_warning_code_name(NEFF_WARN_HEADER_TRAILING_BYTES), "NEFF_WARN_HEADER_TRAILING_BYTES") ||
      neff_code_name(0) != NULL)
    fail("identity", "code names");
  if (failures == before)
    printf("identity: OK: library %s = header %s (%u), neff_init, status, stage and code names\n", neff_version(),
           NEFF_VERSION_STRING, (unsigned)NEFF_VERSION_NUMBER);
  return failures == before;
}

/* ---- every pair of lent buffers ---- */

/* The lent buffers of check and load (outputs) and of info (its buffers), in a pool of one
 * slot each; a pair is made to overlap by putting the second at the start of the first's slot. */
static const char *const check_names[] = {"source", "buffers.arena", "buffers.replay", "outputs.report",
                                          "outputs.json", "outputs.json_written", "err"};
static const char *const info_names[] = {"source", "buffers.arena", "buffers.replay", "info.work",
                                         "info.json", "written", "err"};
enum { BUFFERS = 7, ERR_SLOT = 6 };

static ptrdiff_t never_read(void *ctx, uint8_t *buf, size_t len) {
  (void)buf;
  (void)len;
  *(int *)ctx = 1;
  return 0;
}

/* entry: 0 check, 1 load, 2 info; through: 0 memory, 1 callback. The status; *read set if the
 * callback was called. */
static neff_status overlapping(int entry, int through, uint8_t *pool, size_t slot, int moved, int into, int *read,
                               device *dev) {
  uint8_t *at[BUFFERS];
  for (int i = 0; i < BUFFERS; i++) at[i] = pool + (size_t)(i == moved ? into : i) * slot;
  neff_source src = {at[0], 1024, NULL, NULL, NULL, 0, 0};
  if (through) src = (neff_source){NULL, 0, never_read, read, at[0], 1024, 0};
  neff_buffers bufs = {at[1], neff_arena_min(), at[2], 512};
  neff_error *err = (neff_error *)(void *)at[6];
  if (entry == 2) {
    neff_info_buffers ib = {at[3], 4096, at[4], 256};
    return neff_info(&src, &bufs, NULL, NULL, &ib, (size_t *)(void *)at[5], err);
  }
  neff_outputs out = {(neff_report *)(void *)at[3], at[4], 256, (size_t *)(void *)at[5]};
  if (entry == 0) return neff_check(&src, &bufs, NULL, NULL, &out, err);
  neff_hal hal = {dev, dev_arch, dev_alloc, dev_write, dev_adopt, dev_release, NULL, 0, NULL, NULL};
  return neff_load(&src, &hal, &bufs, NULL, NULL, &out, err);
}

static int overlaps(void) {
  int before = failures, cases = 0;
  size_t slot = (neff_arena_min() + 4096 + 7) & ~(size_t)7;
  uint8_t *pool = malloc(slot * BUFFERS), *clean = malloc(slot * BUFFERS);
  memset(clean, 0x5a, slot * BUFFERS);
  static const char *const entries[] = {"neff_check", "neff_load", "neff_info"};
  for (int entry = 0; entry < 3; entry++) {
    const char *const *names = entry == 2 ? info_names : check_names;
    for (int through = 0; through < 2; through++) {
      for (int first = 0; first < BUFFERS; first++) {
        for (int second = 0; second < BUFFERS; second++) {
          if (first == second) continue;
          memcpy(pool, clean, slot * BUFFERS);
          int read = 0;
          device dev = {0};
          neff_status status = overlapping(entry, through, pool, slot, second, first, &read, &dev);
          char what[128];
          snprintf(what, sizeof what, "%s (%s): %s inside %s", entries[entry], through ? "callback" : "memory",
                   names[second], names[first]);
          cases++;
          if (status != NEFF_STATUS_BAD_ARGUMENT || read || dev.count != 0) fail(what, "status %u", (unsigned)status);
          /* Nothing written but the error slot, and that only when it overlaps nothing. */
          int err_involved = first == ERR_SLOT || second == ERR_SLOT;
          for (int i = 0; i < BUFFERS; i++) {
            if (i == ERR_SLOT && !err_involved) continue;
            if (memcmp(pool + (size_t)i * slot, clean, slot) != 0) fail(what, "slot %d was written", i);
          }
          if (!err_involved) {
            char msg[256];
            neff_error_message((neff_error *)(void *)(pool + ERR_SLOT * slot), (uint8_t *)msg, sizeof msg);
            if (strstr(msg, " overlap: ") == NULL) fail(what, "message: %s", msg);
          }
          dev_free(&dev);
        }
      }
    }
  }
  free(pool);
  free(clean);
  if (failures == before) printf("overlaps: OK: %d layouts refused (every ordered pair of lent buffers, check, load and info, both sources), nothing written\n", cases);
  return failures == before;
}

/* ---- a failing read callback: its errno reaches the error ---- */

typedef struct feed {
  const uint8_t *bytes;
  size_t len, at, fail_at;
} feed;

static ptrdiff_t feed_read(void *ctx, uint8_t *buf, size_t len) {
  feed *f = ctx;
  if (f->fail_at && f->at >= f->fail_at) return -EIO;
  size_t n = f->len - f->at < len ? f->len - f->at : len;
  memcpy(buf, f->bytes + f->at, n);
  f->at += n;
  return (ptrdiff_t)n;
}

/* Damaged copies of `path`: each refused with the expected status, stage, kind and message. */
static int refusals(const char *path) {
  size_t len = 0;
  uint8_t *bytes = read_file(path, &len);
  if (!bytes) {
    fail("refusals", "cannot read %s", path);
    return 0;
  }
  int before = failures;
  size_t arena_len = neff_arena_min() + 64 * 1024;
  uint8_t *arena = malloc(arena_len);
  neff_buffers bufs = {arena, arena_len, NULL, 0};
  neff_error err;
  char msg[512];

  /* 1. Cut short inside the header: gate 2. */
  neff_source src = {bytes, 1000, NULL, NULL, NULL, 0, 0};
  neff_status status = neff_check(&src, &bufs, NULL, NULL, NULL, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("short file", &err);
  if (status != NEFF_STATUS_INVALID || neff_error_stage(&err) != NEFF_STAGE_HEADER ||
      neff_error_kind(&err) != NEFF_ERR_HEADER_SHORT_FILE || strncmp(msg, "header: ", 8) != 0)
    fail("short file", "unexpected refusal");

  /* 2. A byte of the deflate stream flipped: the gzip layer refuses it (bad code or CRC). */
  uint8_t *damaged = malloc(len);
  memcpy(damaged, bytes, len);
  damaged[1024 + (len - 1024) / 2] ^= 0x55;
  src = (neff_source){damaged, len, NULL, NULL, NULL, 0, 0};
  status = neff_check(&src, &bufs, NULL, NULL, NULL, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("flipped deflate byte", &err);
  if (status == NEFF_STATUS_OK || neff_error_status(&err) != status || strlen(msg) == 0)
    fail("flipped deflate byte", "not refused as expected");

  /* 3. A NEFF for another architecture: the device says sunda, the KELF cayman. */
  src = (neff_source){bytes, len, NULL, NULL, NULL, 0, 0};
  neff_options opts = {.arch = 2};
  status = neff_check(&src, &bufs, &opts, NULL, NULL, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("arch mismatch", &err);
  if (status != NEFF_STATUS_INVALID || neff_error_kind(&err) != NEFF_ERR_MANIFEST_ARCH_MISMATCH)
    fail("arch mismatch", "unexpected refusal");

  /* 4. A null arena: an argument error, nothing read. */
  neff_buffers none = {NULL, 0, NULL, 0};
  status = neff_check(&src, &none, NULL, NULL, NULL, &err);
  print_error("null arena", &err);
  if (status != NEFF_STATUS_BAD_ARGUMENT || neff_error_stage(&err) != NEFF_STAGE_ARGUMENT)
    fail("null arena", "unexpected status %u", (unsigned)status);

  /* 5. A device that runs out of memory after 5 regions: NRT_RESOURCE from the HAL, every
   *    region given back. */
  device dev = {0};
  dev.alloc_limit = 5;
  neff_hal hal = {&dev, dev_arch, dev_alloc, dev_write, dev_adopt, dev_release, NULL, 0, NULL, NULL};
  status = neff_load(&src, &hal, &bufs, NULL, NULL, NULL, &err);
  print_error("device out of memory", &err);
  if (status != NEFF_STATUS_RESOURCE || neff_error_stage(&err) != NEFF_STAGE_HAL ||
      neff_error_kind(&err) != NEFF_ERR_HAL_OUT_OF_MEMORY || dev.live != 0)
    fail("device out of memory", "unexpected refusal (%u regions still live)", dev.live);
  dev_free(&dev);

  /* 6. A message cut to a small buffer: snprintf's contract. */
  char small[8];
  size_t whole = neff_error_message(&err, (uint8_t *)small, sizeof small);
  if (whole <= sizeof small - 1 || strlen(small) != sizeof small - 1) fail("cut message", "not cut as snprintf cuts");

  /* 7. All or nothing: a JSON report too long for its buffer undoes the load. */
  device full = {0};
  hal = (neff_hal){&full, dev_arch, dev_alloc, dev_write, dev_adopt, dev_release, NULL, 0, NULL, NULL};
  uint8_t json16[16];
  size_t json_written = 0;
  neff_report report;
  neff_outputs out = {&report, json16, sizeof json16, &json_written};
  src = (neff_source){bytes, len, NULL, NULL, NULL, 0, 0};
  status = neff_load(&src, &hal, &bufs, NULL, NULL, &out, &err);
  print_error("16-byte outputs.json", &err);
  size_t needed = neff_error_needed(&err);
  if (status != NEFF_STATUS_BUFFER_TOO_SMALL || needed <= sizeof json16 || neff_error_available(&err) != sizeof json16 ||
      json_written != needed || full.live != 0 || full.count == 0 || report.placed == 0)
    fail("16-byte outputs.json", "status %u, needed %zu, written %zu, %u of %u regions live", (unsigned)status, needed,
         json_written, full.live, full.count);
  uint8_t *json = malloc(needed);
  out = (neff_outputs){NULL, json, needed, &json_written};
  status = neff_load(&src, &hal, &bufs, NULL, NULL, &out, &err);
  if (status != NEFF_STATUS_OK || json_written != needed || full.live != report.placed)
    fail("outputs.json as needed", "status %u, written %zu of %zu", (unsigned)status, json_written, needed);
  free(json);
  dev_free(&full);

  /* 8. A read callback that fails with -EIO: the errno reaches the error and its message. */
  feed fd = {bytes, len, 0, 4096};
  uint8_t buf[512];
  src = (neff_source){NULL, 0, feed_read, &fd, buf, sizeof buf, 0};
  status = neff_check(&src, &bufs, NULL, NULL, NULL, &err);
  neff_error_message(&err, (uint8_t *)msg, sizeof msg);
  print_error("read fails with EIO", &err);
  ptrdiff_t read_result = neff_error_read_result(&err);
  if (status != NEFF_STATUS_FAILURE || neff_error_stage(&err) != NEFF_STAGE_IO || read_result != -EIO ||
      strstr(msg, "(the read callback returned -") == NULL)
    fail("read fails with EIO", "status %u, read result %td", (unsigned)status, read_result);
  else
    printf("read fails with EIO: neff_error_read_result %td: %s\n", read_result, strerror((int)-read_result));

  /* 9. data_size past the end: byte 16 from memory and through a callback that knows no size. */
  memcpy(damaged, bytes, len);
  uint64_t twice = (uint64_t)len * 2;
  memcpy(damaged + 16, &twice, sizeof twice);
  src = (neff_source){damaged, len, NULL, NULL, NULL, 0, 0};
  neff_check(&src, &bufs, NULL, NULL, NULL, &err);
  uint64_t from_memory = neff_error_offset(&err);
  fd = (feed){damaged, len, 0, 0};
  src = (neff_source){NULL, 0, feed_read, &fd, buf, sizeof buf, 0};
  neff_check(&src, &bufs, NULL, NULL, NULL, &err);
  print_error("data_size past the end (callback, no file size)", &err);
  if (from_memory != 16 || neff_error_offset(&err) != 16 || neff_error_kind(&err) != NEFF_ERR_HEADER_DATA_SIZE_PAST_END)
    fail("data_size past the end", "byte %llu from memory, %llu through the callback", (unsigned long long)from_memory,
         (unsigned long long)neff_error_offset(&err));

  free(damaged);
  free(arena);
  free(bytes);
  if (failures == before) printf("refusals: OK: short file, flipped deflate byte, arch mismatch, null arena, device out of memory, cut message, report too long (undone), read errno, data_size at byte 16 both ways\n");
  return failures == before;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s [--info DIR] NEFF...  (the first is also damaged for the refusal checks)\n", argv[0]);
    return 2;
  }
  printf("c host: neff.h, sizeof(neff_error) %zu, arena minimum %zu, load stack %zu bytes\n", sizeof(neff_error),
         neff_arena_min(), neff_load_stack_size());
  /* --info DIR: also neff_info on each NEFF, the document of the i-th into DIR/i.json. */
  const char *info_dir = NULL;
  int first = 1;
  if (argc > 3 && strcmp(argv[1], "--info") == 0) {
    info_dir = argv[2];
    first = 3;
  }
  int passed = 0, total = 2;
  passed += identity();
  passed += overlaps();
  for (int i = first; i < argc; i++, total++) {
    char tables_out[4096];
    if (info_dir) snprintf(tables_out, sizeof tables_out, "%s/%d.tables", info_dir, i - first);
    passed += load_one(argv[i], info_dir ? tables_out : NULL);
  }
  total++;
  passed += refusals(argv[first]);
  if (info_dir) {
    char out[4096];
    for (int i = first; i < argc; i++, total++) {
      snprintf(out, sizeof out, "%s/%d.json", info_dir, i - first);
      passed += info_one(argv[i], out);
    }
    total++;
    passed += info_refusals(argv[first]);
  }
  printf("c host: %d passed, %d failed\n", passed, total - passed);
  return passed == total && failures == 0 ? 0 : 1;
}
