/* costmodel.h: the device cost model (target.md "Timing model", isa.md "Timing
 * model"), one copy shared by the compiler's decisions (passes/divide.c) and the
 * runtime's reported time (runtime/rt_timing.c), so that what the compiler optimises
 * is what the profile reports.
 *
 * All rates come from the bundle's SpyTarget. Element sizes and matrix rates depend on
 * the operand dtype (ISA codes): float32, the 16-bit floats (DLFloat16), int8; the
 * 8-bit floats are charged at the int8 rate until the card's own fp8 rate is known
 * (cost_mac_rate is the one place to change it).
 *
 * DRAM moves whole aligned 128-byte sticks: a contiguous run of bytes is charged as
 * every stick it touches (cost_run_sticks), a strided transfer as the sum over its runs
 * (cost_dma_sticks). The model takes every DRAM segment's base as stick-aligned, so a
 * run's position within its stick is its byte offset in the segment modulo the stick
 * size; the compiler starts every tensor on a stick boundary (IR_DRAM_ALIGN).
 */
#ifndef SPYREC_COSTMODEL_H
#define SPYREC_COSTMODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "isa.h"
#include "target.h"

#define COST_MAX_STICK 256           /* largest stick size the residue tables handle */

/* Matrix-unit multiply-accumulates per cycle per core for operands of ISA dtype dt:
 * float32 is charged as fp32_mac_divisor fp16 passes, the 16-bit floats at the fp16
 * rate, int8 (and for now the 8-bit floats) at int8_mac_multiplier x fp16. */
static inline double cost_mac_rate(const SpyTarget *t, unsigned dt)
{
    double fp16 = (double)t->macs_fp16_per_cycle;
    switch (dt) {
    case ISA_DT_DLF16:
    case ISA_DT_F16:
    case ISA_DT_BF16: return fp16;
    case ISA_DT_I8:
    case ISA_DT_U8:
    case ISA_DT_F8E4M3FN:
    case ISA_DT_F8E4M3FNUZ:
    case ISA_DT_F8E5M2:
    case ISA_DT_F8E5M2FNUZ: return fp16 * t->int8_mac_multiplier;
    default: return fp16 / (t->fp32_mac_divisor ? t->fp32_mac_divisor : 1);
    }
}

/* Cycles of an m x n x k matrix product on one core: MACs at the dtype's rate, never
 * less than one cycle per 8-row pass. *floor gets the cycles the pass floor adds
 * (under-filled passes; 0 when the MACs dominate). */
static inline double cost_matmul_cycles(const SpyTarget *t, unsigned dt, double m, double n,
                                        double k, double *floor)
{
    double macs = m * n * k, passes = (double)(((uint64_t)m + 7u) / 8u);
    double c = macs / cost_mac_rate(t, dt);
    *floor = 0;
    if (macs <= 0)
        return 0;
    if (passes > c)
        *floor = passes - c;
    return c > passes ? c : passes;
}

/* Cycles of a vector-unit operation over `bytes` bytes (elements x widest element
 * size): one stick per cycle per corelet, x transcendental_factor when transc. */
static inline double cost_vec_cycles(const SpyTarget *t, double bytes, bool transc)
{
    double sticks = (double)(((uint64_t)bytes + t->stick_bytes - 1) / t->stick_bytes);
    return sticks / t->corelets * (transc ? t->transcendental_factor : 1);
}

/* DRAM bandwidth (bytes/s) of a kernel loading ld and storing st bytes: the mixed-
 * traffic rate when both directions exceed 10% of the traffic, else one-way. */
static inline double cost_dram_bw(const SpyTarget *t, double ld, double st)
{
    double total = ld + st;
    bool mixed = ld * 10 > total && st * 10 > total;
    return (mixed ? t->dram_mixed_mbps : t->dram_oneway_mbps) * 1e6;
}

/* Seconds of one core's DRAM traffic of `bytes`, the bandwidth bw shared by `active`
 * cores moving data at the same time. */
static inline double cost_dram_s(double bytes, double active, double bw)
{
    return bytes * active / bw;
}

/* Seconds a core takes to receive `bytes` over the ring (a LOAD with ISA_F_RING):
 * ring_bytes_per_cycle per hop; the tile comes from the neighbour, which forwards what
 * it received (one hop per core; the links of one direction work at the same time). */
static inline double cost_ring_s(const SpyTarget *t, double bytes)
{
    double bpc = t->ring_bytes_per_cycle ? t->ring_bytes_per_cycle : t->stick_bytes;
    return bytes / (bpc * t->clock_mhz * 1e6);
}

/* Modelled seconds of one core: compute plus DRAM minus their overlap. */
static inline double cost_core_s(const SpyTarget *t, double comp_s, double dram_s)
{
    double lo = comp_s < dram_s ? comp_s : dram_s;
    return comp_s + dram_s - t->overlap_permille / 1000.0 * lo;
}

/* Seconds of the kernel-boundary barrier. */
static inline double cost_barrier_s(const SpyTarget *t)
{
    return t->barrier_cycles / (t->clock_mhz * 1e6);
}

/* Roofline seconds of `flops` useful operations and `bytes` compulsory DRAM bytes:
 * all cores' matrix units at the fp16 rate, or DRAM at its peak. */
static inline double cost_roofline_s(const SpyTarget *t, double flops, double bytes)
{
    double peak = (double)t->cores * t->macs_fp16_per_cycle * 2.0 * t->clock_mhz * 1e6;
    double a = flops / peak, b = bytes / (t->dram_peak_mbps * 1e6);
    return a > b ? a : b;
}

/* Sticks touched by a run of `bytes` contiguous bytes starting `res` bytes into a
 * stick. */
static inline uint64_t cost_run_sticks(const SpyTarget *t, uint64_t res, uint64_t bytes)
{
    uint64_t s = t->stick_bytes ? t->stick_bytes : 1;
    return bytes ? (res % s + bytes + s - 1) / s : 0;
}

/* Bytes charged for `rows` runs of `bytes` contiguous bytes each, every run starting on
 * a stick boundary (the compiler's estimate for a tile of rows). */
static inline double cost_rows_bytes(const SpyTarget *t, double rows, double bytes)
{
    return rows * (double)cost_run_sticks(t, 0, (uint64_t)bytes) * t->stick_bytes;
}

/* Steps after which the residues i * step mod s (s > 0) repeat: s / gcd(step mod s, s). */
static inline int64_t cost_residue_period(int64_t s, int64_t step)
{
    int64_t a = ((step % s) + s) % s, b = s;
    while (a) {
        int64_t r = b % a;
        b = a, a = r;
    }
    return s / b;
}

/* Sticks touched by a strided DRAM transfer: runs of run_bytes contiguous bytes, the
 * first at byte offset off, the others at off + sum_d i_d * stride[d] (bytes) for
 * i_d < count[d], d < nd. Exact: the runs' offsets within a stick are counted as a
 * histogram over the stick's residues, one outer dimension at a time. */
static inline uint64_t cost_dma_sticks(const SpyTarget *t, int64_t off, uint64_t run_bytes,
                                       int nd, const uint64_t *count, const int64_t *stride)
{
    int64_t s = t->stick_bytes;
    if (s <= 0 || s > COST_MAX_STICK)
        return 0;
    uint64_t mult = 1;                   /* dims whose stride is whole sticks: their
                                            runs start on the residues of the others */
    int live = 0;
    for (int d = 0; d < nd; d++) {
        if (count[d] > 1 && stride[d] % s == 0)
            mult *= count[d];
        else if (count[d] > 1)
            live++;
    }
    if (live == 0)                       /* every run at off's residue */
        return mult * cost_run_sticks(t, (uint64_t)(((off % s) + s) % s), run_bytes);
    uint64_t h[COST_MAX_STICK] = {0}, nh[COST_MAX_STICK], step[COST_MAX_STICK];
    h[((off % s) + s) % s] = 1;
    for (int d = 0; d < nd; d++) {
        int64_t st = ((stride[d] % s) + s) % s;
        if (count[d] <= 1 || st == 0)
            continue;
        memset(step, 0, sizeof step);    /* how many i < count land on each residue */
        uint64_t period = (uint64_t)cost_residue_period(s, st); /* i * st mod s repeats */
        for (uint64_t i = 0; i < period && i < count[d]; i++)
            step[(int64_t)((i * (uint64_t)st) % (uint64_t)s)] +=
                count[d] / period + (i < count[d] % period);
        int64_t nz[COST_MAX_STICK], nnz = 0;
        for (int64_t b = 0; b < s; b++)
            if (step[b])
                nz[nnz++] = b;
        memset(nh, 0, sizeof nh);
        for (int64_t a = 0; a < s; a++)
            for (int64_t j = 0; h[a] && j < nnz; j++)
                nh[(a + nz[j]) % s] += h[a] * step[nz[j]];
        memcpy(h, nh, sizeof h);
    }
    uint64_t sticks = 0;
    for (int64_t r = 0; r < s; r++)
        if (h[r])
            sticks += h[r] * cost_run_sticks(t, (uint64_t)r, run_bytes);
    return mult * sticks;
}

/* Bytes charged for a DRAM transfer of element size es (bytes) at byte offset off,
 * over nd dims of extents dims[] and DRAM strides stride[] (elements): the whole sticks
 * its contiguous runs touch. The runs are found in DRAM address order, whatever the
 * order of the dims on the scratchpad side (a transposing load of a contiguous block
 * reads whole sticks): dims sorted by stride, those that step exactly over the run so
 * far join it, the others give runs at their own offsets. A dim of stride 0 (a
 * broadcast) moves the same runs once per index: it multiplies the sticks, and takes no
 * part in forming the runs (sorted first, it would cut every run to one element). */
static inline uint64_t cost_transfer_bytes(const SpyTarget *t, int64_t off, int64_t es, int nd,
                                           const uint32_t *dims, const int32_t *stride)
{
    int64_t run = es, st[16];
    uint64_t cnt[16], rep = 1;
    int n = 0, first = 0;
    for (int d = 0; d < nd && d < 16; d++) {
        if (dims[d] == 0)
            return 0;
        if (dims[d] == 1)
            continue;
        if (stride[d] == 0) {                      /* a broadcast: the same runs again */
            rep *= dims[d];
            continue;
        }
        int64_t s = (int64_t)stride[d] * es;
        int j = n++;
        for (; j > 0 && st[j - 1] > s; j--) {      /* insertion sort by stride */
            st[j] = st[j - 1];
            cnt[j] = cnt[j - 1];
        }
        st[j] = s;
        cnt[j] = dims[d];
    }
    for (; first < n && st[first] == run; first++)
        run *= (int64_t)cnt[first];
    return rep * cost_dma_sticks(t, off, (uint64_t)run, n - first, cnt + first, st + first) *
           t->stick_bytes;
}

/* Most sticks a run of `bytes` bytes may touch when it starts at off + i * pitch for
 * an unknown i (a GATHER or SCATTER row): the worst over the residues reachable. Those
 * are the residues congruent to off's modulo g = gcd(pitch, stick), and a run touches
 * no fewer sticks the further into its stick it starts, so the worst is the largest of
 * them, stick - g + off mod g: O(1), where walking the residues one by one took up to
 * stick_bytes steps (a bundle's target may declare any stick size: a fuzzed one with
 * a huge stick spent seconds here). */
static inline uint64_t cost_row_sticks_max(const SpyTarget *t, int64_t off, int64_t pitch,
                                           uint64_t bytes)
{
    int64_t s = t->stick_bytes;
    if (s <= 0)
        return 0;
    int64_t g = s, b = ((pitch % s) + s) % s;      /* gcd(pitch mod s, s), Euclid */
    while (b) {
        int64_t r = g % b;
        g = b;
        b = r;
    }
    int64_t r0 = ((off % s) + s) % s;
    return cost_run_sticks(t, (uint64_t)(s - g + r0 % g), bytes);
}

#endif
