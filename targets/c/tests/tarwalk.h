/* The independent side of the C tests: the NEFF's gzip'd payload inflated by zlib, a tar walk
 * written here, and what must land of each member (a `.npy` member's array data only). Shares
 * no code with the neff core. Included by host_load.c and the firmware's fixture generator. */
#ifndef NEFF_TARWALK_H
#define NEFF_TARWALK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

typedef struct member {
  char name[260];
  const uint8_t *body;
  uint64_t size;
} member;

typedef struct tarball {
  uint8_t *bytes;
  size_t len;
  member *members;
  size_t count;
} tarball;

/* A whole file in a malloc'd buffer (NULL if it cannot be read); its length in *len. */
static inline uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *bytes = n > 0 ? malloc((size_t)n) : NULL;
  if (bytes && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return bytes;
}

/* The NEFF's gzip'd payload (at byte 1024, every gzip member) inflated by zlib. */
static inline int gunzip(const uint8_t *neff, size_t len, tarball *out) {
  if (len <= 1024) return -1;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return -1;
  size_t cap = 1 << 20, used = 0;
  uint8_t *buf = malloc(cap);
  z.next_in = (Bytef *)(neff + 1024);
  z.avail_in = (uInt)(len - 1024);
  int rc = Z_OK;
  while (buf) {
    if (used == cap) {
      cap *= 2;
      uint8_t *grown = realloc(buf, cap);
      if (!grown) break;
      buf = grown;
    }
    z.next_out = buf + used;
    z.avail_out = (uInt)(cap - used);
    rc = inflate(&z, Z_NO_FLUSH);
    used = cap - z.avail_out;
    if (rc == Z_STREAM_END) {
      /* A second gzip member follows only if the next bytes are its magic (not padding). */
      if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
        inflateReset(&z);
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (!buf || rc != Z_STREAM_END) {
    free(buf);
    return -1;
  }
  out->bytes = buf;
  out->len = used;
  return 0;
}

static inline uint64_t octal(const uint8_t *field, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && field[i]; i++) {
    if (field[i] == ' ') continue;
    if (field[i] < '0' || field[i] > '7') break;
    v = v * 8 + (uint64_t)(field[i] - '0');
  }
  return v;
}

/* The regular members of a ustar/PAX stream (PAX `path` records honoured, GNU long names too). */
static inline int walk_tar(tarball *t) {
  size_t at = 0, cap = 64;
  char long_name[256] = {0};
  t->members = calloc(cap, sizeof(member));
  t->count = 0;
  while (t->members && at + 512 <= t->len) {
    const uint8_t *h = t->bytes + at;
    int zero = 1;
    for (int i = 0; i < 512; i++) zero &= h[i] == 0;
    if (zero) break;
    uint64_t size = octal(h + 124, 12);
    char type = (char)h[156];
    const uint8_t *body = h + 512;
    size_t next = at + 512 + (size_t)((size + 511) / 512 * 512);
    if (next > t->len) return -1;
    if (type == 'x' || type == 'L') {
      /* PAX: find `path=`; GNU: the body is the name. */
      if (type == 'L') {
        snprintf(long_name, sizeof long_name, "%.*s", (int)(size < 255 ? size : 255), (const char *)body);
      } else {
        size_t i = 0;
        while (i < size) {
          size_t reclen = 0, j = i;
          while (j < size && body[j] >= '0' && body[j] <= '9') reclen = reclen * 10 + (size_t)(body[j++] - '0');
          if (reclen == 0 || i + reclen > size) break;
          const char *rec = (const char *)body + j + 1;
          size_t vlen = reclen - (j + 1 - i) - 1;
          if (vlen > 5 && memcmp(rec, "path=", 5) == 0)
            snprintf(long_name, sizeof long_name, "%.*s", (int)(vlen - 5), rec + 5);
          i += reclen;
        }
      }
    } else if (type == '0' || type == '\0') {
      if (t->count == cap) {
        cap *= 2;
        member *grown = realloc(t->members, cap * sizeof(member));
        if (!grown) return -1;
        t->members = grown;
      }
      member *m = &t->members[t->count++];
      if (long_name[0]) {
        snprintf(m->name, sizeof m->name, "%s", long_name);
      } else if (h[345]) {
        snprintf(m->name, sizeof m->name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
      } else {
        snprintf(m->name, sizeof m->name, "%.100s", (const char *)h);
      }
      m->body = body;
      m->size = size;
      long_name[0] = 0;
    } else {
      long_name[0] = 0;
    }
    at = next;
  }
  return t->members ? 0 : -1;
}

static inline const member *find_member(const tarball *t, const char *name, size_t len) {
  const member *found = NULL;
  for (size_t i = 0; i < t->count; i++) {
    const char *n = t->members[i].name;
    if (strncmp(n, "./", 2) == 0) n += 2;
    if (strlen(n) == len && memcmp(n, name, len) == 0) found = &t->members[i]; /* the last copy wins */
  }
  return found;
}

/* What must land of a member: a `.npy` member's array data (after its header), else all of it. */
static inline void landing_bytes(const member *m, const uint8_t **bytes, uint64_t *len) {
  size_t n = strlen(m->name);
  *bytes = m->body;
  *len = m->size;
  if (n > 4 && strcmp(m->name + n - 4, ".npy") == 0 && m->size >= 10 && memcmp(m->body, "\x93NUMPY", 6) == 0) {
    uint64_t header = m->body[6] == 1 ? 10u + (uint64_t)(m->body[8] | m->body[9] << 8)
                                      : 12u + (uint64_t)(m->body[8] | m->body[9] << 8 | m->body[10] << 16 |
                                                         (uint64_t)m->body[11] << 24);
    if (header <= m->size) {
      *bytes = m->body + header;
      *len = m->size - header;
    }
  }
}

/* A payload as the format defines it: a `.bin` or `.npy` member outside `debug_info/`. */
static inline int is_payload(const char *name) {
  size_t n = strlen(name);
  if (strncmp(name, "debug_info/", 11) == 0 || n < 4) return 0;
  return strcmp(name + n - 4, ".bin") == 0 || strcmp(name + n - 4, ".npy") == 0;
}

#endif /* NEFF_TARWALK_H */
