/* The NEFFs the C firmware image embeds, with what gen_fixtures computed of them on the host. */
#ifndef FIXTURES_H
#define FIXTURES_H

#include <stdint.h>

/* A payload: member name, bytes that must land (a `.npy` member's array data only), XXH3-64. */
typedef struct payload {
  const char *member;
  uint64_t len;
  uint64_t digest;
} payload;

/* One embedded NEFF and its expectations. */
typedef struct fixture {
  const char *name;
  const uint8_t *start, *end;
  /* Regular tar members. */
  uint32_t members;
  /* Bytes of the gunzipped tar stream. */
  uint64_t inflated_bytes;
  /* The MD5 of the payload data[0..data_size], and how the header stores it (neff_digest_order). */
  uint8_t md5[16];
  uint32_t md5_order;
  const payload *payloads;
  uint32_t payload_count;
  /* Its KELF target (neff_arch): the device's arch for its load. */
  uint32_t arch;
} fixture;

extern const fixture *const fixtures[];
extern const uint32_t fixture_count;

#endif
