/* target.h: the accelerator description shared by compiler and runtime.
 *
 * The compiler reads it from a YAML file (schemas/spyre32.yaml, see target_schema.md)
 * and copies it verbatim into every bundle; the runtime's timing model and the
 * bundle verifier use the copy in the bundle. All fields are integers so that the
 * binary form is exact and comparable. Stored little-endian, 128 bytes.
 */
#ifndef SPYREC_TARGET_H
#define SPYREC_TARGET_H

#include <stdint.h>

typedef struct {
    char name[32];                  /* "spyre32", NUL-padded */
    uint32_t cores;                 /* 32 */
    uint32_t corelets;              /* 2 per core, share the LX */
    uint32_t lx_bytes;              /* 2 MiB scratchpad per core */
    uint32_t lx_budget_bytes;       /* 80% of lx_bytes: what the compiler may plan */
    uint32_t stick_bytes;           /* 128 */
    uint32_t clock_mhz;             /* 1500 */
    uint32_t macs_fp16_per_cycle;   /* 1024 per core */
    uint32_t fp32_mac_divisor;      /* fp32 charged as N fp16 passes: 4 */
    uint32_t int8_mac_multiplier;   /* 2 */
    uint32_t vec_lanes_fp32;        /* 32 per corelet */
    uint32_t transcendental_factor; /* 4 */
    uint32_t dram_peak_mbps;        /* 204800 MB/s */
    uint32_t dram_oneway_mbps;      /* 150000 */
    uint32_t dram_mixed_mbps;       /* 105000 */
    uint32_t overlap_permille;      /* 460: compute/DRAM overlap */
    uint32_t barrier_cycles;        /* asm: cost of a kernel-boundary barrier */
    uint32_t ring_bytes_per_cycle;  /* 128 per direction per hop */
    uint32_t core_window_mib;       /* 256 */
    uint32_t dram_gib;              /* 112 usable */
    uint32_t reserved[5];           /* pads the struct to 128 bytes */
} SpyTarget;

_Static_assert(sizeof(SpyTarget) == 128, "SpyTarget must be 128 bytes");

#endif
