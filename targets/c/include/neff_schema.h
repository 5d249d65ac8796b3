/* neff_schema.h: the discriminator enums and published repr(C) layouts of schema/.
 *
 * Generated from the TOML files of schema/ by scripts/gen-header.sh (macros/codegen, the
 * generator of the Rust side): do not edit. Sizes and offsets are the runtime's on x86-64; the
 * assertions below hold them on every target this header is compiled for. */
#ifndef NEFF_SCHEMA_H
#define NEFF_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C11 and C++11 assert with _Static_assert and static_assert; C99 with an array whose
 * size is negative when the condition fails. */
#if defined(__cplusplus)
#define NEFF_SCHEMA_ASSERT(cond, what) static_assert(cond, what)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define NEFF_SCHEMA_ASSERT(cond, what) _Static_assert(cond, what)
#else
#define NEFF_SCHEMA_CAT_(a, b) a##b
#define NEFF_SCHEMA_CAT(a, b) NEFF_SCHEMA_CAT_(a, b)
#define NEFF_SCHEMA_ASSERT(cond, what) \
  typedef char NEFF_SCHEMA_CAT(neff_schema_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

/* 8-byte alignment for 64-bit fields, as on x86-64 (i386 aligns uint64_t to 4). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NEFF_SCHEMA_ALIGN8 alignas(8)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define NEFF_SCHEMA_ALIGN8 _Alignas(8)
#elif defined(__GNUC__)
#define NEFF_SCHEMA_ALIGN8 __attribute__((aligned(8)))
#elif defined(_MSC_VER)
#define NEFF_SCHEMA_ALIGN8 __declspec(align(8))
#else
#error "neff_schema.h: no way to align a field to 8 bytes with this compiler"
#endif

/* Enums with a fixed 32-bit type where the language has them (C++11, C23); else their
 * values in a uint32_t. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)
#define NEFF_SCHEMA_FIXED_ENUMS 1
#else
#define NEFF_SCHEMA_FIXED_ENUMS 0
#endif

/**
 * I/O tensor dtype of `neff.json` `attrs.dltype`, with the explicit values of the
 * current public `nrt.h` (the old sequential numbering of `nrt_experimental.h` is obsolete).
 * Strings the runtime does not know map to `Unknown` (1 byte per element) with a warning.
 * 
 * The runtime's `nrt_dtype_t` (schema `NrtDtype`).
 */
enum neff_nrt_dtype
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  /**
   * Unknown dtype; the runtime sizes it 1 byte per element.
   */
  NEFF_NRT_DTYPE_UNKNOWN = 0,
  NEFF_NRT_DTYPE_UINT64 = 1,
  NEFF_NRT_DTYPE_INT8 = 2,
  NEFF_NRT_DTYPE_UINT8 = 3,
  NEFF_NRT_DTYPE_INT16 = 4,
  NEFF_NRT_DTYPE_UINT16 = 5,
  NEFF_NRT_DTYPE_BFLOAT16 = 6,
  NEFF_NRT_DTYPE_FLOAT16 = 7,
  NEFF_NRT_DTYPE_INT32 = 8,
  NEFF_NRT_DTYPE_UINT32 = 9,
  NEFF_NRT_DTYPE_FLOAT32 = 10,
  /**
   * No string selects it at the I/O layer.
   */
  NEFF_NRT_DTYPE_FP32R = 11,
  NEFF_NRT_DTYPE_INT64 = 12,
  /**
   * No string selects it at the I/O layer.
   */
  NEFF_NRT_DTYPE_FP8_E3 = 13,
  /**
   * No string selects it at the I/O layer.
   */
  NEFF_NRT_DTYPE_FP8_E4 = 14,
  /**
   * No string selects it at the I/O layer.
   */
  NEFF_NRT_DTYPE_FP8_E5 = 15,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_nrt_dtype neff_nrt_dtype;
#else
typedef uint32_t neff_nrt_dtype;
#endif
#endif

/**
 * `def.json` dtype strings (var `dtype`, descriptor `from_dtype`/`to_dtype`) (19-entry map).
 * 
 * The runtime's `kbin_dtype` (schema `KbinDtype`).
 */
enum neff_kbin_dtype
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_KBIN_DTYPE_INVALID = 0,
  NEFF_KBIN_DTYPE_FLOAT8E3 = 1,
  NEFF_KBIN_DTYPE_FLOAT8E4 = 2,
  NEFF_KBIN_DTYPE_FLOAT8E5 = 3,
  NEFF_KBIN_DTYPE_FLOAT16 = 4,
  NEFF_KBIN_DTYPE_FLOAT32 = 5,
  NEFF_KBIN_DTYPE_FLOAT32R = 6,
  NEFF_KBIN_DTYPE_BFLOAT16 = 7,
  NEFF_KBIN_DTYPE_UINT8 = 8,
  /**
   * Also four packed fp4 values.
   */
  NEFF_KBIN_DTYPE_UINT16 = 9,
  /**
   * Also four packed fp8 values.
   */
  NEFF_KBIN_DTYPE_UINT32 = 10,
  NEFF_KBIN_DTYPE_UINT64 = 11,
  NEFF_KBIN_DTYPE_INT8 = 12,
  NEFF_KBIN_DTYPE_INT16 = 13,
  NEFF_KBIN_DTYPE_INT32 = 14,
  NEFF_KBIN_DTYPE_INT64 = 15,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_kbin_dtype neff_kbin_dtype;
#else
typedef uint32_t neff_kbin_dtype;
#endif
#endif

/**
 * Device architecture of `kelf` `target`. `""` selects `Sunda` (the runtime's default);
 * `"*"` (any architecture) selects no variant: it matches the device present.
 * 
 * The runtime's `al_hal_tpb_arch_type` (schema `Arch`).
 */
enum neff_arch
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  /**
   * Trn1 / Inf2, NeuronCore-v2.
   */
  NEFF_ARCH_SUNDA = 2,
  /**
   * Trn2, NeuronCore-v3.
   */
  NEFF_ARCH_CAYMAN = 3,
  /**
   * Trn3, NeuronCore-v4.
   */
  NEFF_ARCH_MARIANA = 4,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_arch neff_arch;
#else
typedef uint32_t neff_arch;
#endif
#endif

/**
 * Memory-reference type of a `def.json` var `type`. Only the published pairs have strings;
 * `dge-table`, `remote` and the like are unconfirmed and select no variant.
 * 
 * The runtime's `kbin_mr_type` (schema `MrType`).
 */
enum neff_mr_type
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_MR_TYPE_INVALID = 0,
  NEFF_MR_TYPE_SB = 1,
  NEFF_MR_TYPE_BUFFER_STAGED = 2,
  NEFF_MR_TYPE_BUFFER = 3,
  NEFF_MR_TYPE_TMP_BUF = 4,
  NEFF_MR_TYPE_INPUT = 5,
  NEFF_MR_TYPE_OUTPUT = 6,
  NEFF_MR_TYPE_PTR = 7,
  NEFF_MR_TYPE_VIRTUAL_TMP_BUF = 8,
  NEFF_MR_TYPE_LIST = 9,
  NEFF_MR_TYPE_PTR_TABLE = 10,
  NEFF_MR_TYPE_REMOTE = 11,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_mr_type neff_mr_type;
#else
typedef uint32_t neff_mr_type;
#endif
#endif

/**
 * DMA ring type of a `dma_queue` `type`. `data` with `indirect_memcpy` becomes
 * `IndirectMemcpy`; `dynamic` has no published value and selects no variant.
 * 
 * The runtime's `kbin_dma_ring_type` (schema `DmaRingType`).
 */
enum neff_dma_ring_type
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_DMA_RING_TYPE_ENG = 0,
  NEFF_DMA_RING_TYPE_H2T = 1,
  NEFF_DMA_RING_TYPE_H2T_SERVICE = 2,
  NEFF_DMA_RING_TYPE_H2T_COPY = 3,
  NEFF_DMA_RING_TYPE_COLLECTIVES = 4,
  NEFF_DMA_RING_TYPE_MODEL = 5,
  NEFF_DMA_RING_TYPE_DATA = 6,
  NEFF_DMA_RING_TYPE_IN = 7,
  NEFF_DMA_RING_TYPE_OUT = 8,
  NEFF_DMA_RING_TYPE_INDIRECT_MEMCPY = 9,
  NEFF_DMA_RING_TYPE_ACT_TBL = 10,
  NEFF_DMA_RING_TYPE_DYNAMIC_ACT_TBL = 11,
  NEFF_DMA_RING_TYPE_DVE_TBL = 12,
  NEFF_DMA_RING_TYPE_IOQ_SWITCHER = 13,
  NEFF_DMA_RING_TYPE_TOPSP_INIT = 14,
  NEFF_DMA_RING_TYPE_EMBEDDING_UPDATE = 15,
  NEFF_DMA_RING_TYPE_CUSTOM_OP = 16,
  NEFF_DMA_RING_TYPE_GENERIC = 17,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_dma_ring_type neff_dma_ring_type;
#else
typedef uint32_t neff_dma_ring_type;
#endif
#endif

/**
 * Engine of a `dma_queue` `owner` and of the `def.json` engine keys.
 * 
 * The runtime's `al_hal_tpb_eng_type` (schema `EngineType`).
 */
enum neff_engine_type
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_ENGINE_TYPE_PE = 0,
  NEFF_ENGINE_TYPE_ACT = 1,
  NEFF_ENGINE_TYPE_POOL = 2,
  NEFF_ENGINE_TYPE_DVE = 3,
  NEFF_ENGINE_TYPE_SP = 4,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_engine_type neff_engine_type;
#else
typedef uint32_t neff_engine_type;
#endif
#endif

/**
 * DMA descriptor `op`; absent means `copy`. `cast` is a type-converting copy: COPY with
 * the cast flag set (real NEFFs write it). Anything else is `Unknown dma operation`.
 * 
 * The runtime's `kbin_dma_desc_op` (schema `DescOp`).
 */
enum neff_desc_op
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_DESC_OP_COPY = 0,
  NEFF_DESC_OP_FMA = 1,
  NEFF_DESC_OP_ADD = 2,
  NEFF_DESC_OP_MIN = 3,
  NEFF_DESC_OP_MAX = 4,
  NEFF_DESC_OP_TRANSPOSE = 5,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_desc_op neff_desc_op;
#else
typedef uint32_t neff_desc_op;
#endif
#endif

/**
 * DMA descriptor type; not selected by a string.
 * 
 * The runtime's `kbin_dma_desc_type` (schema `DescType`).
 */
enum neff_desc_type
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_DESC_TYPE_DATA = 0,
  NEFF_DESC_TYPE_EVENT = 1,
  NEFF_DESC_TYPE_INC_SEMA = 2,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_desc_type neff_desc_type;
#else
typedef uint32_t neff_desc_type;
#endif
#endif

/**
 * State-buffer carveout `type` of `runtime_statebuffer_reservation`.
 * 
 * The runtime's `kbin_sb_carveout_type` (schema `CarveoutType`).
 */
enum neff_carveout_type
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_CARVEOUT_TYPE_INVALID = 0,
  NEFF_CARVEOUT_TYPE_EVTACCEL = 1,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_carveout_type neff_carveout_type;
#else
typedef uint32_t neff_carveout_type;
#endif
#endif

/**
 * Device-memory usage classes for allocation accounting.
 * 
 * The runtime's `device memory usage class` (schema `UsageClass`).
 */
enum neff_usage_class
#if NEFF_SCHEMA_FIXED_ENUMS
  : uint32_t
#endif
{
  NEFF_USAGE_CLASS_GENERIC = 0,
  NEFF_USAGE_CLASS_INSTR_PE = 1,
  NEFF_USAGE_CLASS_INSTR_ACT = 2,
  NEFF_USAGE_CLASS_INSTR_POOL = 3,
  NEFF_USAGE_CLASS_IO = 4,
  NEFF_USAGE_CLASS_DRAM_SPILL = 5,
  NEFF_USAGE_CLASS_WEIGHT = 6,
  NEFF_USAGE_CLASS_NOTIFICATION = 7,
  NEFF_USAGE_CLASS_ACT_TABLE = 8,
  NEFF_USAGE_CLASS_INSTR_DVE = 9,
  NEFF_USAGE_CLASS_INSTR_SP = 10,
  NEFF_USAGE_CLASS_SCRATCHPAD = 11,
  NEFF_USAGE_CLASS_TENSOR = 12,
  NEFF_USAGE_CLASS_UCODE_LIB = 13,
  NEFF_USAGE_CLASS_POOL_STDIO = 14,
  NEFF_USAGE_CLASS_CC = 15,
  NEFF_USAGE_CLASS_SCRATCHPAD_NOT_SHARED = 16,
  NEFF_USAGE_CLASS_XT_CC = 17,
  NEFF_USAGE_CLASS_DMA_RING = 18,
  NEFF_USAGE_CLASS_DMA_RING_SPILL = 19,
  NEFF_USAGE_CLASS_DMA_RING_IO = 20,
  NEFF_USAGE_CLASS_DMA_RING_COLLECTIVES = 21,
};
#ifndef __cplusplus
#if NEFF_SCHEMA_FIXED_ENUMS
typedef enum neff_usage_class neff_usage_class;
#else
typedef uint32_t neff_usage_class;
#endif
#endif

/**
 * One I/O tensor of `neff.json` as the runtime keeps it.
 * 
 * The runtime's `io_node_info_t` (schema `IoNodeInfo`), 144 bytes.
 */
typedef struct io_node_info_t {
  /**
   * Bytes: product of the shape times the element size (offset 0).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t size;
  /**
   * `nrt_dtype_t` value (offset 8).
   */
  uint32_t dtype;
  /**
   * Dimensions; the first `ndim` are used (offset 12).
   */
  uint32_t shape[32];
  /**
   * Number of dimensions, at most 32 (offset 140).
   */
  uint32_t ndim;
} io_node_info_t;
NEFF_SCHEMA_ASSERT(sizeof(io_node_info_t) == 144, "sizeof(io_node_info_t)");
NEFF_SCHEMA_ASSERT(offsetof(io_node_info_t, size) == 0, "offsetof(io_node_info_t, size)");
NEFF_SCHEMA_ASSERT(offsetof(io_node_info_t, dtype) == 8, "offsetof(io_node_info_t, dtype)");
NEFF_SCHEMA_ASSERT(offsetof(io_node_info_t, shape) == 12, "offsetof(io_node_info_t, shape)");
NEFF_SCHEMA_ASSERT(offsetof(io_node_info_t, ndim) == 140, "offsetof(io_node_info_t, ndim)");

/**
 * One `runtime_statebuffer_reservation` entry (`kbin_sb_carveout_t`).
 * 
 * The runtime's `sb_carveout` (schema `SbCarveout`), 40 bytes.
 */
typedef struct sb_carveout {
  /**
   * `kbin_sb_carveout_type` (1 = evtaccel) (offset 0).
   */
  uint32_t carveout_type;
  /**
   * State-buffer byte offset (offset 8).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t offset;
  /**
   * Bytes (offset 16).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t size;
  /**
   * First partition (JSON `base_partition` or `start_partition`) (offset 24).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t start_partition;
  /**
   * Partition count (JSON `partitions` or `num_partitions`) (offset 32).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t num_partitions;
} sb_carveout;
NEFF_SCHEMA_ASSERT(sizeof(sb_carveout) == 40, "sizeof(sb_carveout)");
NEFF_SCHEMA_ASSERT(offsetof(sb_carveout, carveout_type) == 0, "offsetof(sb_carveout, carveout_type)");
NEFF_SCHEMA_ASSERT(offsetof(sb_carveout, offset) == 8, "offsetof(sb_carveout, offset)");
NEFF_SCHEMA_ASSERT(offsetof(sb_carveout, size) == 16, "offsetof(sb_carveout, size)");
NEFF_SCHEMA_ASSERT(offsetof(sb_carveout, start_partition) == 24, "offsetof(sb_carveout, start_partition)");
NEFF_SCHEMA_ASSERT(offsetof(sb_carveout, num_partitions) == 32, "offsetof(sb_carveout, num_partitions)");

/**
 * The FP8 cast policy of `fp8_conversion_config`.
 * 
 * The runtime's `kbin_fp8_conv_cfg_t` (schema `KbinFp8ConvCfg`), 16 bytes.
 */
typedef struct kbin_fp8_conv_cfg_t {
  /**
   * Range extension (offset 0).
   */
  bool fp8_range_extension;
  /**
   * Maximum exponent for e4m3 (offset 4).
   */
  uint32_t emax_fp8_e4m3;
  /**
   * Maximum exponent for e5m2 (offset 8).
   */
  uint32_t emax_fp8_e5m2;
  /**
   * OCP saturation (offset 12).
   */
  bool ocp_sat;
  /**
   * SIS mode (offset 13).
   */
  bool fp8_sis;
  /**
   * SNS mode (offset 14).
   */
  bool fp8_sns;
} kbin_fp8_conv_cfg_t;
NEFF_SCHEMA_ASSERT(sizeof(kbin_fp8_conv_cfg_t) == 16, "sizeof(kbin_fp8_conv_cfg_t)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, fp8_range_extension) == 0, "offsetof(kbin_fp8_conv_cfg_t, fp8_range_extension)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, emax_fp8_e4m3) == 4, "offsetof(kbin_fp8_conv_cfg_t, emax_fp8_e4m3)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, emax_fp8_e5m2) == 8, "offsetof(kbin_fp8_conv_cfg_t, emax_fp8_e5m2)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, ocp_sat) == 12, "offsetof(kbin_fp8_conv_cfg_t, ocp_sat)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, fp8_sis) == 13, "offsetof(kbin_fp8_conv_cfg_t, fp8_sis)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_fp8_conv_cfg_t, fp8_sns) == 14, "offsetof(kbin_fp8_conv_cfg_t, fp8_sns)");

/**
 * `kbin_fp8_conv_cfg_t` with its presence flag.
 * 
 * The runtime's `fp8_conversion_info` (schema `Fp8ConversionInfo`), 20 bytes.
 */
typedef struct fp8_conversion_info {
  /**
   * `fp8_conversion_config` was present (offset 0).
   */
  bool initialized;
  /**
   * The policy (offset 4).
   */
  kbin_fp8_conv_cfg_t cfg;
} fp8_conversion_info;
NEFF_SCHEMA_ASSERT(sizeof(fp8_conversion_info) == 20, "sizeof(fp8_conversion_info)");
NEFF_SCHEMA_ASSERT(offsetof(fp8_conversion_info, initialized) == 0, "offsetof(fp8_conversion_info, initialized)");
NEFF_SCHEMA_ASSERT(offsetof(fp8_conversion_info, cfg) == 4, "offsetof(fp8_conversion_info, cfg)");

/**
 * Collective stream count (`num_streams` / `cc_streams.num_streams`); the upper 4 bytes are unpublished.
 * 
 * The runtime's `kbin_cc_streams_t` (schema `KbinCcStreams`), 8 bytes.
 */
typedef struct kbin_cc_streams_t {
  /**
   * Streams (the runtime initialises it to 1) (offset 0).
   */
  uint32_t num_streams;
  /**
   * Unpublished, zero (offset 4).
   */
  uint32_t reserved;
} kbin_cc_streams_t;
NEFF_SCHEMA_ASSERT(sizeof(kbin_cc_streams_t) == 8, "sizeof(kbin_cc_streams_t)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_cc_streams_t, num_streams) == 0, "offsetof(kbin_cc_streams_t, num_streams)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_cc_streams_t, reserved) == 4, "offsetof(kbin_cc_streams_t, reserved)");

/**
 * One DMA queue set of `dma_queue`, without its flexible `ring_instances` pointer array.
 * 
 * The runtime's `kbin_dma_t` (schema `KbinDmaHeader`), 296 bytes.
 */
typedef struct kbin_dma_t {
  /**
   * `kbin_dma_ring_type` (offset 0).
   */
  uint32_t ring_type;
  /**
   * `al_hal_tpb_eng_type` of the owner (offset 4).
   */
  uint32_t owner;
  /**
   * `num_queues` (offset 8).
   */
  uint32_t queue_set_cnt;
  /**
   * Entries of `semaphores` used (offset 12).
   */
  uint32_t semaphore_cnt;
  /**
   * `semaphore_set` (or `semaphore`) (offset 16).
   */
  uint32_t semaphores[32];
  /**
   * Entries of `pseudo_serialization_semaphores` used (offset 144).
   */
  uint32_t pseudo_serialization_semaphore_cnt;
  /**
   * Runtime-assigned (offset 148).
   */
  uint32_t pseudo_serialization_semaphores[32];
  /**
   * `dynamic_dma.SB_scratch_partition_offset` (offset 276).
   */
  uint32_t dge_sb_scratch_addr;
  /**
   * `dynamic_dma.SB_scratch_partition_size` (offset 280).
   */
  uint32_t dge_sb_scratch_size;
  /**
   * Queue flags (offset 284).
   */
  uint32_t flags;
  /**
   * `queue_instances` count (offset 288).
   */
  uint32_t ring_instance_count;
  /**
   * Padding before the pointer array (offset 292).
   */
  uint32_t reserved;
} kbin_dma_t;
NEFF_SCHEMA_ASSERT(sizeof(kbin_dma_t) == 296, "sizeof(kbin_dma_t)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, ring_type) == 0, "offsetof(kbin_dma_t, ring_type)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, owner) == 4, "offsetof(kbin_dma_t, owner)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, queue_set_cnt) == 8, "offsetof(kbin_dma_t, queue_set_cnt)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, semaphore_cnt) == 12, "offsetof(kbin_dma_t, semaphore_cnt)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, semaphores) == 16, "offsetof(kbin_dma_t, semaphores)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, pseudo_serialization_semaphore_cnt) == 144, "offsetof(kbin_dma_t, pseudo_serialization_semaphore_cnt)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, pseudo_serialization_semaphores) == 148, "offsetof(kbin_dma_t, pseudo_serialization_semaphores)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, dge_sb_scratch_addr) == 276, "offsetof(kbin_dma_t, dge_sb_scratch_addr)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, dge_sb_scratch_size) == 280, "offsetof(kbin_dma_t, dge_sb_scratch_size)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, flags) == 284, "offsetof(kbin_dma_t, flags)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, ring_instance_count) == 288, "offsetof(kbin_dma_t, ring_instance_count)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_dma_t, reserved) == 292, "offsetof(kbin_dma_t, reserved)");

/**
 * Scratchpad sizes and variable count of a subgraph, without its flexible `mem` array.
 * 
 * The runtime's `kbin_mem_ref_set_t` (schema `KbinMemRefSetHeader`), 24 bytes.
 */
typedef struct kbin_mem_ref_set_t {
  /**
   * Private scratch bytes (offset 0).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t local_scratchpad_size;
  /**
   * Shared scratchpad bytes (max of `backing_variable_off + size`) (offset 8).
   */
  NEFF_SCHEMA_ALIGN8 uint64_t shared_scratchpad_size;
  /**
   * Number of variables (offset 16).
   */
  uint32_t nmem;
  /**
   * Padding before the array (offset 20).
   */
  uint32_t reserved;
} kbin_mem_ref_set_t;
NEFF_SCHEMA_ASSERT(sizeof(kbin_mem_ref_set_t) == 24, "sizeof(kbin_mem_ref_set_t)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_mem_ref_set_t, local_scratchpad_size) == 0, "offsetof(kbin_mem_ref_set_t, local_scratchpad_size)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_mem_ref_set_t, shared_scratchpad_size) == 8, "offsetof(kbin_mem_ref_set_t, shared_scratchpad_size)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_mem_ref_set_t, nmem) == 16, "offsetof(kbin_mem_ref_set_t, nmem)");
NEFF_SCHEMA_ASSERT(offsetof(kbin_mem_ref_set_t, reserved) == 20, "offsetof(kbin_mem_ref_set_t, reserved)");

#endif /* NEFF_SCHEMA_H */
