/* spydump: prints the contents of a spyrec bundle (.sbin): header, format version,
 * target, section table with sizes and CRCs, then (when the runtime's verifier
 * accepts the bundle) tensors, segments, kernels with per-core instruction counts and
 * modelled times, the schedule and the META text.
 *
 *   spydump model.sbin        exit 0: printed a valid bundle; 1: invalid/unreadable; 2: usage
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "isa.h"
#include "sbin.h"
#include "spyrt.h"

/* Reads a whole file into a malloc'd buffer; NULL (errno set) on failure. */
static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb, cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
        errno = EIO;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Name of a section id. */
static const char *sec_name(uint32_t id) {
    static const char *const n[SPY_SEC_MAX] = {"?",        "STRINGS",  "TENSORS", "CONSTS",
                                               "KERNELS",  "PROGRAMS", "CODE",    "SCHEDULE",
                                               "SEGMENTS", "META",     "SELFTEST",
                                               "DEBUG", "DIMREFS", [15] = "VARIANTS"};
    return id < SPY_SEC_MAX && n[id] ? n[id] : "?";
}

/* Prints the header and target; returns false if the header cannot be read. */
static bool dump_header(const uint8_t *buf, size_t len) {
    if (len < sizeof(SpyHeader)) {
        printf("file: %zu bytes, shorter than the %zu-byte header\n", len, sizeof(SpyHeader));
        return false;
    }
    const SpyHeader *h = (const SpyHeader *)buf;
    printf("file:      %zu bytes (header says %llu)\n", len, (unsigned long long)h->file_size);
    printf("magic:     %.8s%s\n", h->magic,
           memcmp(h->magic, SPY_SBIN_MAGIC, 8) ? "  (BAD)" : "");
    printf("version:   format v%u.%u (this runtime reads v%d.x: %s)\n", h->major, h->minor,
           SPY_SBIN_MAJOR, spy_version());
    printf("features:  0x%x\n", h->features);
    printf("sections:  %u (header %u bytes)\n", h->nsections, h->header_bytes);
    const SpyTarget *t = &h->target;
    printf("target:    %.32s: %u cores x %u corelets, LX %u (budget %u), stick %u B, %u MHz\n",
           t->name, t->cores, t->corelets, t->lx_bytes, t->lx_budget_bytes, t->stick_bytes,
           t->clock_mhz);
    printf("           %u fp16 MAC/cycle (fp32 /%u, int8 x%u), transcendental x%u, DRAM "
           "%u/%u/%u MB/s peak/one-way/mixed, overlap %u/1000, barrier %u cycles\n",
           t->macs_fp16_per_cycle, t->fp32_mac_divisor, t->int8_mac_multiplier,
           t->transcendental_factor, t->dram_peak_mbps, t->dram_oneway_mbps, t->dram_mixed_mbps,
           t->overlap_permille, t->barrier_cycles);
    return true;
}

/* Prints the section table with stored and computed CRCs. */
static void dump_sections(const uint8_t *buf, size_t len) {
    const SpyHeader *h = (const SpyHeader *)buf;
    uint64_t n = h->nsections;
    if (sizeof(SpyHeader) + n * sizeof(SpySection) > len) {
        printf("section table passes the end of the file\n");
        return;
    }
    SpyHeader hc = *h;
    hc.table_crc = 0;
    uint32_t crc = spy_crc32c(0, &hc, sizeof hc);
    crc = spy_crc32c(crc, buf + sizeof hc, (size_t)n * sizeof(SpySection));
    printf("table crc: 0x%08x (%s)\n\n", h->table_crc, crc == h->table_crc ? "ok" : "MISMATCH");
    printf("  #  section     offset        size        crc32c\n");
    const SpySection *s = (const SpySection *)(buf + sizeof *h);
    for (uint64_t i = 0; i < n; i++) {
        const char *st = "ok";
        if (s[i].offset > len || s[i].size > len - s[i].offset)
            st = "OUT OF FILE";
        else if (spy_crc32c(0, buf + s[i].offset, (size_t)s[i].size) != s[i].crc32c)
            st = "CRC MISMATCH";
        printf("%3llu  %-9s %10llu  %10llu    0x%08x %s\n", (unsigned long long)i,
               sec_name(s[i].id), (unsigned long long)s[i].offset,
               (unsigned long long)s[i].size, s[i].crc32c, st);
    }
}

/* Payload of section id of a verified bundle (NULL, *n = 0 when absent). */
static const uint8_t *payload(const uint8_t *buf, uint32_t id, uint64_t *n) {
    const SpyHeader *h = (const SpyHeader *)buf;
    const SpySection *s = (const SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].id == id) {
            *n = s[i].size;
            return buf + s[i].offset;
        }
    *n = 0;
    return NULL;
}

/* Prints tensors and segments of a verified bundle. */
static void dump_tensors(const uint8_t *buf) {
    uint64_t ns, nt, nseg;
    const char *str = (const char *)payload(buf, SPY_SEC_STRINGS, &ns);
    const SpyTensorDesc *t = (const SpyTensorDesc *)payload(buf, SPY_SEC_TENSORS, &nt);
    const SpySegmentDesc *sg = (const SpySegmentDesc *)payload(buf, SPY_SEC_SEGMENTS, &nseg);
    nt /= sizeof *t;
    nseg /= sizeof *sg;
    printf("\ntensors (%llu):\n", (unsigned long long)nt);
    for (uint64_t i = 0; i < nt; i++) {
        printf("  %-6s %-24s %s->%s [", t[i].role == SPY_ROLE_INPUT ? "input" : "output",
               str + t[i].name, spy_dtype_name(t[i].host_dtype), spy_dtype_name(t[i].dev_dtype));
        for (int d = 0; d < t[i].rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)t[i].dims[d]);
        printf("]  numel %llu  segment %u", (unsigned long long)t[i].numel, t[i].seg);
        if (t[i].flags & SPY_TF_DYNAMIC)
            printf("  dynamic axis %u (extent: int32 at segment %u +%llu)", t[i].dyn_axis,
                   t[i].count_seg, (unsigned long long)t[i].count_off);
        if (t[i].flags & SPY_TF_SHAPED)
            printf("  shaped (dims: %u int32 at segment %u +%llu)", t[i].rank, t[i].count_seg,
                   (unsigned long long)t[i].count_off);
        if (t[i].flags & SPY_TF_HIDDEN)
            printf("  hidden");
        if (t[i].flags & SPY_TF_DIMS)
            printf("  dims (the actual size of each symbol, written by the runtime)");
        printf("\n");
    }
    uint64_t nr;
    const SpyDimRef *r = (const SpyDimRef *)payload(buf, SPY_SEC_DIMREFS, &nr);
    nr = r ? nr / sizeof *r : 0;
    for (uint64_t i = 0; i < nr; i++)
        if (r[i].tensor < nt)
            printf("  %s '%s' axis %u: symbol %u, %lld..%lld%s%.0u\n", i ? "     " : "dims:",
                   str + t[r[i].tensor].name, r[i].axis, r[i].sym, (long long)r[i].min,
                   (long long)r[i].max, r[i].step ? " in steps of " : "", r[i].step);
    printf("\nsegments (%llu):\n", (unsigned long long)nseg);
    static const char *const kind[] = {"const", "arena", "io"};
    for (uint64_t i = 0; i < nseg; i++) {
        printf("  %3llu  %-5s %12llu bytes", (unsigned long long)i,
               sg[i].kind < 3 ? kind[sg[i].kind] : "?", (unsigned long long)sg[i].size);
        if (sg[i].kind == SPY_SEGK_IO)
            printf("  tensor %u '%s'", sg[i].tensor, str + t[sg[i].tensor].name);
        printf("\n");
    }
}

/* Prints the value of "key=value" line `key` of the META text (or "?"). */
static void meta_field(const char *meta, const char *key, const char *label) {
    size_t n = strlen(key);
    const char *v = NULL;
    for (const char *l = meta; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, n) && l[n] == '=') {
            v = l + n + 1;
            break;
        }
    printf("%-10s ", label);
    for (; v && *v && *v != '\n'; v++)
        putchar(*v >= 32 && *v < 127 ? *v : '?');
    printf("%s\n", v ? "" : "?");
}

/* Prints kernels (per-core instruction counts, modelled time), schedule, META. */
static void dump_kernels(const uint8_t *buf, const spy_model *m) {
    uint64_t ns, nk, np, nc, nsch;
    const char *str = (const char *)payload(buf, SPY_SEC_STRINGS, &ns);
    const SpyKernelDesc *k = (const SpyKernelDesc *)payload(buf, SPY_SEC_KERNELS, &nk);
    const SpyProgramDesc *p = (const SpyProgramDesc *)payload(buf, SPY_SEC_PROGRAMS, &np);
    const SpyInsn *code = (const SpyInsn *)payload(buf, SPY_SEC_CODE, &nc);
    const uint32_t *sch = (const uint32_t *)payload(buf, SPY_SEC_SCHEDULE, &nsch);
    nk /= sizeof *k;
    nc /= sizeof *code;
    uint64_t hist[ISA_OPCODE_COUNT] = {0};
    for (uint64_t i = 0; i < nc; i++)
        hist[code[i].opcode]++;
    printf("\ncode: %llu instructions:", (unsigned long long)nc);
    static const char *const op[ISA_OPCODE_COUNT] = {"NOP", "LOAD", "STORE", "GATHER",
                                                     "MATMUL", "VEC", "VREDUCE", "VFILL",
                                                     "VSCAN", "BARRIER", "SCATTER"};
    for (int o = 0; o < ISA_OPCODE_COUNT; o++)
        if (hist[o])
            printf(" %s %llu", op[o], (unsigned long long)hist[o]);
    uint64_t guarded = 0;                    /* isa.md "Guards" */
    for (uint64_t i = 0; i < nc && (((const SpyHeader *)buf)->features & SPY_FEAT_GUARDS); i++)
        guarded += spy_insn_guard(&code[i]).n > 0;
    if (guarded)
        printf("; %llu guarded (skipped at small sizes)", (unsigned long long)guarded);
    printf("\n\nkernels (%llu):\n", (unsigned long long)nk);
    for (uint64_t i = 0; i < nk; i++) {
        spy_kernel_profile pr;
        spy_model_kernel_profile(m, (int)i, &pr);
        printf("  %3llu  %-32s flops %llu  min dram %llu B  modelled %.3f us (roofline %.3f, "
               "%s)\n",
               (unsigned long long)i, str + k[i].name, (unsigned long long)pr.flops,
               (unsigned long long)pr.min_dram_bytes, pr.device_us, pr.roofline_us, pr.limiter);
        printf("       insns/core:");
        for (uint32_t c = 0; c < k[i].ncores; c++)
            printf(" %u", p[k[i].first_program + c].ninsns);
        printf("\n");
    }
    printf("\nschedule (%llu):", (unsigned long long)(nsch / 4));
    for (uint64_t i = 0; i < nsch / 4; i++)
        printf(" %u", sch[i]);
    printf("\nmodelled device time: %.3f us per inference\n", spy_model_device_us(m));
    printf("\nmeta:\n");
    for (const char *s = spy_model_meta(m); *s; s++)
        if (*s == '\n' || (*s >= 32 && *s < 127))
            putchar(*s);
        else
            printf("\\x%02x", (unsigned char)*s);
    printf("\n");
}

/* Prints the DEBUG section: the model's names of the tensors kernels store, with the
 * writing kernel, device dtype, shape and DRAM place (or that the bundle was stripped). */
static void dump_debug(const uint8_t *buf, const spy_model *m) {
    int n = spy_model_num_debug_tensors(m);
    if (n < 0) {
        printf("\ndebug info: none (compiled with --strip)\n");
        return;
    }
    uint64_t nd;
    const SpyDebugDesc *d = (const SpyDebugDesc *)payload(buf, SPY_SEC_DEBUG, &nd);
    printf("\ndebug tensors (%d):\n", n);
    for (int i = 0; i < n; i++) {
        spy_debug_tensor_info info;
        spy_model_debug_tensor_info(m, i, &info);
        printf("  %4d  %-32s kernel %-4d %-6s [", i, info.name, info.kernel,
               spy_dtype_name(info.dtype));
        for (int k = 0; k < info.rank; k++)
            printf("%s%lld", k ? ", " : "", (long long)info.dims[k]);
        printf("]  segment %u +%llu  strides [", d[i].seg, (unsigned long long)d[i].offset);
        for (int k = 0; k < info.rank; k++)
            printf("%s%lld", k ? ", " : "", (long long)d[i].strides[k]);
        printf("]\n");
    }
}

/* The size buckets (VARIANTS section): per bucket its box (each input's bound shape),
 * kernels, instructions' bundle bytes and modelled time, then the bounds' own. */
static void dump_variants(const uint8_t *buf, const spy_model *m) {
    uint64_t n = 0;
    const uint8_t *p = payload(buf, SPY_SEC_VARIANTS, &n);
    int nv = spy_model_num_variants(m);
    if (!p || !nv)
        return;
    const SpyVariantDesc *d = (const SpyVariantDesc *)(p + sizeof(SpyVariantsHead));
    printf("\nsize buckets (%d, smallest first; a run takes, of those that hold its sizes, "
           "the least modelled time at them):\n", nv);
    printf("  #  %-40s %8s %12s %12s\n", "box (inputs' bound shapes)", "kernels", "bytes",
           "modelled us");
    for (int v = 0; v <= nv; v++) {
        const spy_model *b = v < nv ? spy_model_variant(m, v) : m;
        char box[256] = "";
        size_t at = 0;
        for (int i = 0; i < spy_model_num_inputs(b) && at < sizeof box - 40; i++) {
            spy_tensor_info ti;
            spy_model_input_info(b, i, &ti);
            at += (size_t)snprintf(box + at, sizeof box - at, "%s%s ", i ? ", " : "", ti.name);
            for (int k = 0; k < ti.rank && at < sizeof box - 24; k++)
                at += (size_t)snprintf(box + at, sizeof box - at, "%s%lld", k ? "x" : "",
                                       (long long)ti.dims[k]);
        }
        if (v < nv)
            printf("  %-2d %-40s %8d %12llu %12.3f\n", v, box, spy_model_num_kernels(b),
                   (unsigned long long)d[v].size, spy_model_device_us(b));
        else
            printf("  -  %-40s %8d %12s %12.3f  (the bounds)\n", box,
                   spy_model_num_kernels(b), "", spy_model_device_us(b));
    }
}

/* spydump --asm: the disassembly of a bundle that verifies (the same text as spyrec
 * --emit=asm), so that a compiled bundle need not be compiled again to be read. */
static int dump_asm(const char *path, const uint8_t *buf, size_t len) {
    spy_model *m = NULL;
    char err[512];
    if (spy_model_load_memory(buf, len, &m, err, sizeof err) != SPY_OK) {
        fprintf(stderr, "spydump: %s: %s\n", path, err);
        return 1;
    }
    spy_model_free(m);
    return cg_disassemble(buf, len, stdout) ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: spydump [--asm] FILE.sbin\n\nPrint a bundle: header, format version, target, "
               "sections with sizes and CRCs,\nthen (if it verifies) compiler version and flags, "
               "tensors, segments, kernels\nwith per-core instruction counts and modelled "
               "times, the schedule, META and the debug tensors.\nWith --asm: its disassembly instead (as spyrec "
               "--emit=asm).\n\nexit status: 0 valid bundle; 1 invalid or "
               "unreadable; 2 bad usage.\n");
        return 0;
    }
    bool as_asm = argc == 3 && !strcmp(argv[1], "--asm");
    if (as_asm)
        argv++, argc--;
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: spydump [--asm] FILE.sbin\n");
        return 2;
    }
    size_t len = 0;
    uint8_t *buf = read_file(argv[1], &len);
    if (!buf) {
        fprintf(stderr, "spydump: %s: cannot read: %s\n", argv[1], strerror(errno));
        return 1;
    }
    if (as_asm) {
        int arc = dump_asm(argv[1], buf, len);
        free(buf);
        return arc;
    }
    printf("%s\n", argv[1]);
    int rc = 1;
    if (dump_header(buf, len)) {
        dump_sections(buf, len);
        spy_model *m = NULL;
        char err[512];
        if (spy_model_load_memory(buf, len, &m, err, sizeof err) != SPY_OK) {
            printf("\nverify: FAILED: %s\n", err);
            fprintf(stderr, "spydump: %s: %s\n", argv[1], err);
        } else {
            printf("\nverify: ok\n");
            meta_field(spy_model_meta(m), "compiler", "compiler:");
            meta_field(spy_model_meta(m), "flags", "flags:");
            dump_tensors(buf);
            dump_kernels(buf, m);
            dump_debug(buf, m);
            dump_variants(buf, m);
            spy_model_free(m);
            rc = 0;
        }
    }
    free(buf);
    return rc;
}
