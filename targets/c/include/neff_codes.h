/* neff's stable error and warning codes (`ErrorKind::code()`, `WarningKind::code()`).
 *
 * Generated from schema/errors.toml by neff's codegen
 * (`NEFF_UPDATE_SCHEMA_DOC=1 cargo test -p neff --test refusals_table`); do not edit.
 * A code keeps its meaning and is never reused (docs/error-codes.md). Each comment is the
 * message template (the placeholders name the error's fields) and the runtime status
 * (`NRT_STATUS`) the error maps to. */
#ifndef NEFF_CODES_H
#define NEFF_CODES_H

/** The code of each error the core can give. */
typedef enum neff_error_code {
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO = 100,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_OTHER = 101,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_NOT_FOUND = 102,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_PERMISSION_DENIED = 103,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_CONNECTION_REFUSED = 104,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_CONNECTION_RESET = 105,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_CONNECTION_ABORTED = 106,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_NOT_CONNECTED = 107,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_ADDR_IN_USE = 108,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_ADDR_NOT_AVAILABLE = 109,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_BROKEN_PIPE = 110,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_ALREADY_EXISTS = 111,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_INVALID_INPUT = 112,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_INVALID_DATA = 113,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_TIMED_OUT = 114,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_INTERRUPTED = 115,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_UNSUPPORTED = 116,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_OUT_OF_MEMORY = 117,
    /** `read failed: {kind:?}`; NRT_FAILURE (1). */
    NEFF_ERR_IO_WRITE_ZERO = 118,
    /** `unexpected end of input`; NRT_INVALID (2). */
    NEFF_ERR_TRUNCATED = 200,
    /** `capacity {limit} = {capacity} exceeded`; NRT_RESOURCE (4). */
    NEFF_ERR_CAPACITY = 300,
    /** `the load arena of {capacity} bytes is full: at least {needed} bytes are needed`; NRT_RESOURCE (4). */
    NEFF_ERR_ARENA_FULL = 400,
    /** `Invalid number of NEFF bytes received {received:x}`; NRT_INVALID (2). */
    NEFF_ERR_HEADER_SHORT_FILE = 501,
    /** `Invalid NEFF header size {header_size:x}: only 0x400 is accepted`; NRT_INVALID (2). */
    NEFF_ERR_HEADER_HEADER_SIZE_NOT1024 = 502,
    /** `Invalid NEFF file size hdr sz: {header_size:x}, file sz: {file_size:x}`; NRT_INVALID (2). */
    NEFF_ERR_HEADER_HEADER_SIZE_PAST_END = 503,
    /** `NEFF version: {major}.{minor} is not supported, accepted version range: 0.x-2.x`; NRT_UNSUPPORTED_NEFF_VERSION (10). */
    NEFF_ERR_HEADER_UNSUPPORTED_VERSION = 504,
    /** `This NEFF (version: {major}.{minor}, features: 0x{features:x}) has been compiled by a newer version of Neuron compiler. Features supported by this Neuron Runtime: 0x7ffffff. Please update the aws-neuronx-runtime-lib package to the latest version.`; NRT_UNSUPPORTED_NEFF_VERSION (10). */
    NEFF_ERR_HEADER_NEWER_FEATURES = 505,
    /** `Invalid NEFF data size({data_size:x} vs {available:x})`; NRT_INVALID (2). */
    NEFF_ERR_HEADER_DATA_SIZE_PAST_END = 506,
    /** `Invalid NEFF data size(0): the header declares no payload`; NRT_INVALID (2). */
    NEFF_ERR_HEADER_ZERO_DATA_SIZE = 507,
    /** `Unsupported NEFF packager: {pkg_version}`; NRT_UNSUPPORTED_NEFF_VERSION (10). */
    NEFF_ERR_HEADER_UNSUPPORTED_PACKAGER = 508,
    /** `not a gzip member: magic {b0:02x} {b1:02x}, expected 1f 8b`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_BAD_MAGIC = 601,
    /** `gzip compression method {method} is not deflate (8)`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_UNSUPPORTED_METHOD = 602,
    /** `gzip header sets reserved flag bits (FLG 0x{flags:02x})`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_RESERVED_FLAGS = 603,
    /** `gzip header CRC mismatch (stored {stored:04x}, computed {computed:04x})`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_HEADER_CRC = 604,
    /** `gzip decompression failed (inflate status {status})`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_INFLATE = 605,
    /** `gzip CRC-32 mismatch (trailer {stored:08x}, inflated data {computed:08x})`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_CRC = 606,
    /** `gzip ISIZE mismatch (trailer {stored}, inflated {computed} mod 2^32)`; NRT_INVALID (2). */
    NEFF_ERR_GZIP_ISIZE = 607,
    /** `tar header checksum mismatch (stored {stored:o}, computed {computed:o})`; NRT_INVALID (2). */
    NEFF_ERR_TAR_CHECKSUM = 701,
    /** `tar header field {field} is not a number`; NRT_INVALID (2). */
    NEFF_ERR_TAR_BAD_NUMBER = 702,
    /** `tar header field {field} is negative or too large`; NRT_INVALID (2). */
    NEFF_ERR_TAR_NUMBER_OUT_OF_RANGE = 703,
    /** `{what} tar member (type '{c}') is not supported` (`{what}`: `multivolume`, `volume label` or `unsupported`; `{c}`: the typeflag); NRT_INVALID (2). */
    NEFF_ERR_TAR_UNSUPPORTED_TYPE = 704,
    /** `malformed PAX extended header record`; NRT_INVALID (2). */
    NEFF_ERR_TAR_BAD_PAX_RECORD = 705,
    /** `PAX size is not a decimal number`; NRT_INVALID (2). */
    NEFF_ERR_TAR_BAD_PAX_SIZE = 706,
    /** `tar member has an empty name`; NRT_INVALID (2). */
    NEFF_ERR_TAR_EMPTY_NAME = 707,
    /** `tar member name is an absolute path`; NRT_INVALID (2). */
    NEFF_ERR_TAR_ABSOLUTE_NAME = 708,
    /** `tar member name has a '..' component`; NRT_INVALID (2). */
    NEFF_ERR_TAR_PARENT_COMPONENT = 709,
    /** `tar member name contains a NUL byte`; NRT_INVALID (2). */
    NEFF_ERR_TAR_NUL_IN_NAME = 710,
    /** `expected {expected}, found byte 0x{found:02X}` (or `expected {expected}, found '{c}'`) (`{c}`: the byte as a character); NRT_INVALID (2). */
    NEFF_ERR_JSON_UNEXPECTED_BYTE = 801,
    /** `expected {expected}, found {found}`; NRT_INVALID (2). */
    NEFF_ERR_JSON_UNEXPECTED_TOKEN = 802,
    /** `unexpected end of JSON input`; NRT_INVALID (2). */
    NEFF_ERR_JSON_UNEXPECTED_END = 803,
    /** `JSON nested deeper than {limit} levels`; NRT_INVALID (2). */
    NEFF_ERR_JSON_DEPTH_LIMIT = 804,
    /** `invalid escape sequence in string`; NRT_INVALID (2). */
    NEFF_ERR_JSON_INVALID_ESCAPE = 805,
    /** `unpaired UTF-16 surrogate in \u escape`; NRT_INVALID (2). */
    NEFF_ERR_JSON_LONE_SURROGATE = 806,
    /** `invalid UTF-8 in string`; NRT_INVALID (2). */
    NEFF_ERR_JSON_INVALID_UTF8 = 807,
    /** `unescaped control character in string`; NRT_INVALID (2). */
    NEFF_ERR_JSON_CONTROL_CHAR_IN_STRING = 808,
    /** `invalid number`; NRT_INVALID (2). */
    NEFF_ERR_JSON_INVALID_NUMBER = 809,
    /** `number out of range`; NRT_INVALID (2). */
    NEFF_ERR_JSON_NUMBER_OUT_OF_RANGE = 810,
    /** `number is not an integer`; NRT_INVALID (2). */
    NEFF_ERR_JSON_NOT_AN_INTEGER = 811,
    /** `data after the top-level JSON value`; NRT_INVALID (2). */
    NEFF_ERR_JSON_TRAILING_DATA = 812,
    /** `trailing comma`; NRT_INVALID (2). */
    NEFF_ERR_JSON_TRAILING_COMMA = 813,
    /** the key's runtime message (schema `missing`: `Missing required fields in NEFF JSON`, `Missing dltype or shape in attrs`, `Failed to parse, key: type`, `missing <var_id>`, `missing <type> in {within}`, `Missing GPSIMD lib version!`, `invalid dma block`, `Invalid Neff: no Outputs`), else `missing required key "{key}"`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_MISSING_KEY = 901,
    /** `{message}: expected {want}, found {got}` (or `expected {want}, found {got}`) (`{message}` where the runtime has one: `KELF attribute is not a string`, ...; `{want}`, `{got}`: the JSON types); NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_WRONG_TYPE = 902,
    /** `duplicate key "{key}"`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_DUPLICATE_KEY = 903,
    /** `{message}` (`Invalid dltype data format`, `Invalid shape data format`); NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_BAD_FORMAT = 904,
    /** `Unknown dma operation: {op}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UNKNOWN_DMA_OPERATION = 905,
    /** `Invalid runtime_statebuffer_reservation type {t}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INVALID_CARVEOUT_TYPE = 906,
    /** `number out of range (at most {max})`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_OUT_OF_RANGE = 907,
    /** `Too many dimensions ({n})`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_TOO_MANY_DIMENSIONS = 908,
    /** `EID {e} out of bounds for dtypes/shapes`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_EID_OUT_OF_BOUNDS = 909,
    /** `Output node ID {n} out of bounds`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_OUTPUT_NODE_OUT_OF_BOUNDS = 910,
    /** `Input node ID {n} out of bounds`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INPUT_NODE_OUT_OF_BOUNDS = 911,
    /** `node_row_ptr has no entry for node {n}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_ROW_PTR_OUT_OF_BOUNDS = 912,
    /** `tensor size overflows 64 bits`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_SIZE_OVERFLOW = 913,
    /** `KELF node found but missing 'kelf' attribute`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_KELF_ATTRIBUTE_MISSING = 914,
    /** `Missing required fields in NEFF JSON (input node {node} has no name)`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INPUT_WITHOUT_NAME = 915,
    /** `No KELF node found in NEFF JSON`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_NO_KELF_NODE = 916,
    /** `invalid string (.) in {v}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INVALID_VERSION = 917,
    /** `Invalid target '{t}'`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INVALID_TARGET = 918,
    /** `Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v{neff}, instance arch: v{device}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_ARCH_MISMATCH = 919,
    /** `var {var} of type {var_type} has no size (input, output, file, tmp-buf, virtual and pointer vars need one)`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_VAR_WITHOUT_SIZE = 920,
    /** `pointer var {var} has size {size}; a pointer is 8 bytes`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_POINTER_SIZE = 921,
    /** `alignment provided not power of 2. alignment={a}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_ALIGNMENT_NOT_POWER_OF_TWO = 922,
    /** `Unexpected var_ids set! max={max}, size={size}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UNEXPECTED_VAR_IDS = 923,
    /** `var_id {id} is used by two vars`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_DUPLICATE_VAR_ID = 924,
    /** `Invalid Neff: no Outputs`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_NO_OUTPUTS = 925,
    /** `Invalid owner '{owner}' for DMA queue {queue}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_INVALID_OWNER = 926,
    /** `Invalid Neff: Queue set instances are not supported for {what} queues ({queue})` (`{what}`: `input`, `output` or `embedding update`); NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_QUEUE_INSTANCES_NOT_SUPPORTED = 927,
    /** `Runtime supports maximum of 32 semaphores per queue set (got {n})`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_TOO_MANY_SEMAPHORES = 928,
    /** `Invalid Neff: DMA queue {queue} has {count} queues; at most 16 are supported`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_TOO_MANY_QUEUES = 929,
    /** `Invalid Neff: embedding update queue {q} has no embedding_update_sync_semaphore`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_MISSING_SYNC_SEMAPHORE = 930,
    /** `Invalid Neff: dynamic DMA queue {q} needs SB_scratch_partition_offset and SB_scratch_partition_size`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_DYNAMIC_DMA_SCRATCH = 931,
    /** `Mismatch between GPSIMD lib version and NRT version!`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UCODE_VERSION_MISMATCH = 932,
    /** `UCode Library {library} has cpu_id {cpu_id}, not below its total_cpus`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UCODE_CPU_ID = 933,
    /** `UCode Library {library} has invalid number of total cpus {total_cpus}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UCODE_TOTAL_CPUS = 934,
    /** `UCode Library {library} has already been added`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UCODE_LIB_TWICE = 935,
    /** `Extended-ISA library with {n} ops: the runtime supports at most 18`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_TOO_MANY_EXT_ISA_OPS = 936,
    /** `CCE descriptor with {n} sources in from_arr: the runtime supports at most 16`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_TOO_MANY_CCE_SOURCES = 937,
    /** `DMA descriptor without from (only a CCE descriptor, with from_arr, has none)`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_DESC_WITHOUT_SOURCE = 938,
    /** `Invalid cce desc ap without dtype`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_CCE_WITHOUT_DTYPE = 939,
    /** `DMA queue {q} is not a dma_queue of the subgraph's def.json`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UNKNOWN_DMA_QUEUE = 940,
    /** `DMA descriptor {key} variable {name} is not a var of the subgraph's def.json` (`{key}`: `from` or `to`); NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_UNKNOWN_DMA_VARIABLE = 941,
    /** `Size cannot be 0`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_ZERO_DESC_SIZE = 942,
    /** `descriptor steps have {steps} entries but sizes have {sizes}: they must match`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_STEPS_SIZES_MISMATCH = 943,
    /** `Missing or corrupted runtime_statebuffer_reservation field in def.json and NEURON_RT_ALLOW_LEGACY_NEFF=1 is not set. Potentially a legacy neff without proper compiler support`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_MISSING_CARVEOUT = 944,
    /** `Event Accel carveout SB partition must start at 0. Got {p}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_CARVEOUT_START_PARTITION = 945,
    /** `Event Accel carveout SB partition count must be 128. Got {n}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_CARVEOUT_PARTITION_COUNT = 946,
    /** `Event Accel carveout SB partition offset must start at 0x37ff8. Got 0x{o:x}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_CARVEOUT_OFFSET = 947,
    /** `Event Accel carveout SB size must be 8. Got {s}`; NRT_INVALID (2). */
    NEFF_ERR_MANIFEST_CARVEOUT_SIZE = 948,
    /** `Invalid NN: {neff}, neff.json is missing (and no kelf-0.json or kelf-a.json to fall back on)`; NRT_INVALID (2). */
    NEFF_ERR_CHAIN_NEFF_JSON_MISSING = 1001,
    /** `member {member} is missing from the archive`; NRT_INVALID (2). */
    NEFF_ERR_CHAIN_MEMBER_MISSING = 1002,
    /** `Instruction size {size} for {member} exceeds maximum supported size {max}` (`{max}`: 4294967295, `u32::MAX`); NRT_INVALID (2). */
    NEFF_ERR_CHAIN_INSTR_TOO_LARGE = 1003,
    /** `variable size {declared} does not match its payload's {actual} bytes`; NRT_INVALID (2). */
    NEFF_ERR_CHAIN_VAR_SIZE_MISMATCH = 1004,
    /** `two graphs name the same subgraph directory`; NRT_INVALID (2). */
    NEFF_ERR_CHAIN_DUPLICATE_SUBGRAPH = 1005,
    /** `the chain names this member as a {named}, but it came before the manifest naming it and was read as a {read}` (`{named}`, `{read}`: `neff.json`, `KELF descriptor`, `subgraph definition` or `engine JSON`); NRT_INVALID (2). */
    NEFF_ERR_CHAIN_READ_AS_OTHER = 1006,
    /** `device out of memory: requested {requested} bytes (align {align}), {free} bytes free, largest free span {largest_free} bytes`; NRT_RESOURCE (4). */
    NEFF_ERR_HAL_OUT_OF_MEMORY = 1101,
    /** `capacity {limit} = {capacity} exceeded (device region table)`; NRT_RESOURCE (4). */
    NEFF_ERR_HAL_REGION_TABLE_FULL = 1102,
    /** `device region ids exhausted`; NRT_RESOURCE (4). */
    NEFF_ERR_HAL_IDS_EXHAUSTED = 1103,
    /** `device allocation of 0 bytes`; NRT_INVALID (2). */
    NEFF_ERR_HAL_ZERO_SIZE = 1104,
    /** `alignment provided not power of 2. alignment={align}`; NRT_INVALID (2). */
    NEFF_ERR_HAL_BAD_ALIGNMENT = 1105,
    /** `device region {region} is not live`; NRT_FAILURE (1). */
    NEFF_ERR_HAL_UNKNOWN_REGION = 1106,
    /** `write of {len} bytes at offset {offset} overruns device region {region} of {size} bytes`; NRT_INVALID (2). */
    NEFF_ERR_HAL_OUT_OF_BOUNDS = 1107,
    /** `out-of-order write to device region {region}: at offset {offset}, expected {expected}`; NRT_FAILURE (1). */
    NEFF_ERR_HAL_OUT_OF_ORDER_WRITE = 1108,
    /** `cannot adopt staged region {region} of {staged} bytes into {requested} bytes`; NRT_INVALID (2). */
    NEFF_ERR_HAL_ADOPT_TOO_SMALL = 1109,
    /** `the device's notebook was asked for while another call held the device`; NRT_FAILURE (1). */
    NEFF_ERR_HAL_NOTEBOOK_BUSY = 1110,
    /** `NUMPY bad magic {found:02x?} != \x93NUMPY` (or `NUMPY bad header {magic:x} != 0x4e93`) (`{magic}`: the first two bytes, little-endian); NRT_INVALID (2). */
    NEFF_ERR_NPY_BAD_MAGIC = 1201,
    /** `NUMPY format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)`; NRT_INVALID (2). */
    NEFF_ERR_NPY_UNSUPPORTED_VERSION = 1202,
    /** `NUMPY header: {e}` (`{e}`: `capacity {limit} = {capacity} exceeded`); NRT_RESOURCE (4). */
    NEFF_ERR_NPY_CAPACITY = 1203,
    /** `NUMPY header truncated: {got} of {needed} bytes`; NRT_INVALID (2). */
    NEFF_ERR_NPY_TRUNCATED = 1204,
    /** `NUMPY header malformed at byte {offset}: expected {expected}`; NRT_INVALID (2). */
    NEFF_ERR_NPY_MALFORMED = 1205,
    /** `NUMPY header has no '{key}' key`; NRT_INVALID (2). */
    NEFF_ERR_NPY_MISSING_KEY = 1206,
    /** `NUMPY header repeats the '{key}' key`; NRT_INVALID (2). */
    NEFF_ERR_NPY_DUPLICATE_KEY = 1207,
    /** `NUMPY header has an unknown key at byte {offset}`; NRT_INVALID (2). */
    NEFF_ERR_NPY_UNKNOWN_KEY = 1208,
    /** `NUMPY unsupported dtype descr '{descr}'`; NRT_INVALID (2). */
    NEFF_ERR_NPY_UNSUPPORTED_DESCR = 1209,
    /** `NUMPY array size overflows 64 bits`; NRT_INVALID (2). */
    NEFF_ERR_NPY_DATA_LEN_OVERFLOW = 1210,
} neff_error_code;

/** The code of each warning the core can give. */
typedef enum neff_warning_code {
    /** `{count} bytes after the payload (past data_size) are ignored`; warning. */
    NEFF_WARN_HEADER_TRAILING_BYTES = 501,
    /** `header_size 0x{header_size:x} accepted; the payload is read at 0x400 as the runtime does`; warning. */
    NEFF_WARN_HEADER_HEADER_SIZE_ALLOWED = 502,
    /** `SHA256 mismatch!` (or `MD5 mismatch!`); warning. */
    NEFF_WARN_HEADER_INTEGRITY_MISMATCH = 503,
    /** `{nonzero_bytes} non-zero bytes after the gzip trailer (first at byte {first_offset}) are ignored`; warning. */
    NEFF_WARN_GZIP_TRAILING_DATA = 601,
    /** `the payload holds {count} gzip members, read as one stream (as libarchive does)`; warning. */
    NEFF_WARN_GZIP_MULTIPLE_MEMBERS = 602,
    /** `tar archive ends with a single zero block (two expected)`; warning. */
    NEFF_WARN_TAR_LONE_ZERO_BLOCK = 701,
    /** `tar archive has no end-of-archive blocks`; warning. */
    NEFF_WARN_TAR_MISSING_END_OF_ARCHIVE = 702,
    /** `{nonzero_bytes} non-zero bytes after the tar end-of-archive are ignored`; warning. */
    NEFF_WARN_TAR_DATA_AFTER_END = 703,
    /** `PAX global header 'path'/'size' ignored (as libarchive does)`; warning. */
    NEFF_WARN_TAR_GLOBAL_PAX_IGNORED = 704,
    /** `unknown tar member type '{c}' read as a regular file` (`{c}`: the typeflag); warning. */
    NEFF_WARN_TAR_UNKNOWN_TYPE = 705,
    /** `tar header checksum uses the historic signed sum`; warning. */
    NEFF_WARN_TAR_SIGNED_CHECKSUM = 706,
    /** `sparse tar member skipped (not supported)`; warning. */
    NEFF_WARN_TAR_SPARSE_SKIPPED = 707,
    /** `tar member skipped: its name is not UTF-8, so no manifest can name it`; warning. */
    NEFF_WARN_TAR_NAME_NOT_UTF8 = 708,
    /** `Unknown dtype: {d}, defaulting to UNKNOWN`; warning. */
    NEFF_WARN_MANIFEST_UNKNOWN_DTYPE = 901,
    /** `unknown {key} '{value}': accepted (the spec does not say to refuse it)`; warning. */
    NEFF_WARN_MANIFEST_UNKNOWN_VALUE = 902,
    /** `KELF node found by op "__kelf" (no attrs.func_name)`; warning. */
    NEFF_WARN_MANIFEST_KELF_NODE_BY_OP = 903,
    /** `Engine {name} not found in NEFF {neff}, using empty placeholder` (or `Engine {name} not found in NEFF, using empty placeholder`) (`{name}`: the engine's JSON name); warning. */
    NEFF_WARN_MANIFEST_ENGINE_MISSING = 904,
    /** `{name}_instr "{def_instr}" differs from the engine JSON's instr "{engine_instr}"; using the engine JSON's` (`{name}`: the engine's JSON name); warning. */
    NEFF_WARN_MANIFEST_INSTR_MISMATCH = 905,
    /** `the KELF has {graphs} graphs but the header's lnc_size is {lnc_size}`; warning. */
    NEFF_WARN_CHAIN_GRAPH_COUNT = 1001,
    /** `instruction stream of {size} bytes is not a multiple of 64`; warning. */
    NEFF_WARN_CHAIN_INSTR_NOT_MULTIPLE_OF64 = 1002,
    /** `no neff.json: using the KELF descriptor by its conventional name`; warning. */
    NEFF_WARN_CHAIN_KELF_FALLBACK = 1003,
    /** `member appears twice in the archive; the later one wins`; warning. */
    NEFF_WARN_CHAIN_DUPLICATE_MEMBER = 1004,
    /** `payload is not referenced by any manifest; released`; warning. */
    NEFF_WARN_CHAIN_UNREFERENCED = 1005,
    /** `KELF descriptor not named by neff.json; ignored`; warning. */
    NEFF_WARN_CHAIN_KELF_NOT_NAMED = 1006,
} neff_warning_code;

#endif /* NEFF_CODES_H */
