/* gen_sbin.c: broken bundles. Container damage (truncation, magic, versions, bit
 * flips in header and section table, section placement) is applied to written bytes;
 * table and instruction damage is applied before writing, so that the checksums are
 * right and the verifier itself must refuse the bundle. */
#include <stddef.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "gen_sbin.h"

static Bun B; /* the bundle being edited */

/* Start from reference bundle which. */
static Bun *base(const char *which)
{
    bun_free(&B);
    bun_base(&B, which);
    return &B;
}

/* Write the edited bundle as case sbin/NAME.sbin. */
static void emit(const char *name, const char *frag)
{
    Buf f = bun_write(&B);
    gen_case(fmt("sbin/%s.sbin", name), f.p, f.n, "spyrun", 2, frag, NULL);
    buf_free(&f);
}

/* Write raw bundle bytes as case sbin/NAME.sbin. */
static void emit_raw(const char *name, Buf *f, const char *frag)
{
    gen_case(fmt("sbin/%s.sbin", name), f->p, f->n, "spyrun", 2, frag, NULL);
    buf_free(f);
}

/* Write the current bundle as case sbin/NAME.sbin with the feature bits feat set. */
static void emit_feat(const char *name, const char *frag, uint32_t feat)
{
    Buf f = bun_write(&B);
    ((SpyHeader *)f.p)->features = feat;
    bun_fix_crcs(&f);
    emit_raw(name, &f, frag);
}

static void reference_bundles(void)
{
    static const char *const names[] = {"relu", "embed", "div", "reludyn", "relubuckets"};
    for (int i = 0; i < 5; i++) {
        Buf f = sbin_build(names[i]);
        gen_file(fmt("sbin/ok/%s.sbin", names[i]), f.p, f.n);
        buf_free(&f);
    }
}

static void container(void)
{
    Buf ref = sbin_build("relu");
    size_t n = ref.n;
    static const size_t short_cuts[] = {0, 1, 8, 100, 255};
    for (size_t i = 0; i < sizeof short_cuts / sizeof short_cuts[0]; i++) {
        Buf f = {0};
        buf_put(&f, ref.p, short_cuts[i]);
        emit_raw(fmt("trunc_%zu", short_cuts[i]), &f, "shorter than the 256-byte header");
    }
    size_t cuts[] = {256, 300, 600, n / 2, n - 64, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        Buf f = {0};
        buf_put(&f, ref.p, cuts[i]);
        emit_raw(fmt("trunc_%zu", cuts[i]), &f, "offset 24: header says the file has");
    }
    Buf f = buf_copy(&ref);
    buf_put(&f, "\0\0\0\0", 4);
    emit_raw("padded_4", &f, "offset 24: header says the file has");
    f = buf_copy(&ref);
    memcpy(f.p, "SPYRSBIM", 8);
    emit_raw("bad_magic", &f, "offset 0: bad magic");
    f = buf_copy(&ref);
    memcpy(f.p,
           "\x7f"
           "ELF",
           4);
    emit_raw("elf_magic", &f, "offset 0: bad magic");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->major = SPY_SBIN_MAJOR + 1;
    bun_fix_crcs(&f);
    emit_raw("major_newer", &f, "bundle needs format v2.");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->major = 0;
    emit_raw("major_older", &f, "bundle has old format v0.");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->features = 0x80;   /* a bit no format defines */
    bun_fix_crcs(&f);
    emit_raw("feature_bits", &f, "offset 12: unknown required feature bits 0x80");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->header_bytes = 512;
    bun_fix_crcs(&f);
    emit_raw("header_bytes", &f, "offset 16: header_bytes is 512");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->nsections = 0;
    emit_raw("nsections_0", &f, "offset 20: section count 0");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->nsections = 100000;
    emit_raw("nsections_100000", &f, "offset 20: section count 100000");
    f = (Buf){0};
    buf_put(&f, ref.p, 600);
    ((SpyHeader *)f.p)->nsections = 60;
    ((SpyHeader *)f.p)->file_size = 600;
    emit_raw("nsections_60", &f, "section table (60 entries) passes the end");
    buf_free(&ref);
}

/* Single bit flips in the header and the section table: everything after file_size is
 * covered by the table CRC. */
static void bit_flips(void)
{
    Buf ref = sbin_build("embed");
    static const size_t bits[] = {32 * 8,     33 * 8 + 7,  36 * 8 + 1,  40 * 8 + 3,  72 * 8,
                                  80 * 8 + 5, 120 * 8 + 2, 167 * 8 + 7, 200 * 8 + 4, 255 * 8 + 7,
                                  256 * 8,    260 * 8 + 6, 264 * 8 + 1, 272 * 8 + 3, 280 * 8 + 5,
                                  300 * 8,    350 * 8 + 2, 400 * 8 + 1, 500 * 8 + 7, 543 * 8 + 7};
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        Buf f = buf_copy(&ref);
        f.p[bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
        emit_raw(fmt("flip_bit_%zu", bits[i]), &f,
                 "offset 32: header/section-table CRC32C mismatch");
    }
    /* one flip in each of three sections' payload */
    static const uint32_t ids[] = {SPY_SEC_CONSTS, SPY_SEC_CODE, SPY_SEC_META};
    static const char *const nm[] = {"CONSTS", "CODE", "META"};
    for (int i = 0; i < 3; i++) {
        Buf f = buf_copy(&ref);
        SpySection *s = bun_section(&f, ids[i]);
        size_t at = (size_t)(s->offset + s->size / 2);
        f.p[at] ^= 0x10;
        emit_raw(fmt("flip_payload_%s", nm[i]), &f,
                 fmt("section %s at offset %llu: CRC32C mismatch", nm[i],
                     (unsigned long long)s->offset));
    }
    buf_free(&ref);
}

/* Section table edits with the checksums recomputed. */
static void sections(void)
{
    Buf ref = sbin_build("relu");
    Buf f = buf_copy(&ref);
    SpySection *code = bun_section(&f, SPY_SEC_CODE), *prog = bun_section(&f, SPY_SEC_PROGRAMS);
    code->offset = prog->offset;
    bun_fix_crcs(&f);
    emit_raw("sec_overlap", &f, "overlap");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_CODE)->offset += 8;
    bun_fix_crcs(&f);
    emit_raw("sec_misaligned", &f, "section CODE misaligned");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_META)->align = 32;
    bun_fix_crcs(&f);
    emit_raw("sec_align_32", &f, "section META misaligned");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_CODE)->size = 1u << 30;
    bun_fix_crcs(&f);
    emit_raw("sec_past_end", &f, "section CODE");
    f = buf_copy(&ref);
    code = bun_section(&f, SPY_SEC_CODE);
    code->offset = UINT64_MAX - 63;
    code->size = 128;
    bun_fix_crcs(&f);
    emit_raw("sec_offset_overflow", &f, "passes the end");
    f = buf_copy(&ref);
    code = bun_section(&f, SPY_SEC_CODE);
    code->size = UINT64_MAX;
    bun_fix_crcs(&f);
    emit_raw("sec_size_max", &f, "passes the end");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_STRINGS)->offset = 0;
    bun_fix_crcs(&f);
    emit_raw("sec_over_header", &f, "overlaps the header or table");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_SCHEDULE)->id = 77;
    bun_fix_crcs(&f);
    emit_raw("sec_unknown_id", &f, "has unknown id 77");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_SCHEDULE)->id = SPY_SEC_STRINGS;
    bun_fix_crcs(&f);
    emit_raw("sec_duplicate", &f, "duplicate section STRINGS");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_META)->id = SPY_SEC_SELFTEST;
    bun_fix_crcs(&f);
    emit_raw("sec_missing_meta", &f, "required section META is missing");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_TENSORS)->size -= 28;
    bun_fix_crcs(&f);
    emit_raw("sec_tensors_partial", &f, "size 228 is not a multiple of its 128-byte entries");
    f = buf_copy(&ref);
    bun_section(&f, SPY_SEC_CODE)->size -= 1;
    bun_fix_crcs(&f);
    emit_raw("sec_code_partial", &f, "not a multiple of its 128-byte entries");
    f = buf_copy(&ref);
    ((SpyHeader *)f.p)->nsections = 8; /* drops META */
    bun_fix_crcs(&f);
    emit_raw("sec_count_short", &f, "required section META is missing");
    f = buf_copy(&ref);                    /* padding must be zero (not under any CRC) */
    size_t pad = sizeof(SpyHeader) + ((SpyHeader *)f.p)->nsections * sizeof(SpySection) + 3;
    f.p[pad] = 0x5a;
    emit_raw("pad_nonzero", &f, fmt("offset %zu: padding byte 0x5a before section STRINGS", pad));
    f = buf_copy(&ref);
    SpySection *strs = bun_section(&f, SPY_SEC_STRINGS);
    pad = (size_t)(strs->offset + strs->size);
    f.p[pad] = 0x01;
    emit_raw("pad_nonzero_between", &f, fmt("offset %zu: padding byte 0x01 before section", pad));
    buf_free(&ref);
}

/* Table contents (checksums right). */
static void tables(void)
{
    base("relu");
    B.strings.p[B.strings.n - 1] = 'x';
    emit("strings_no_nul", "section STRINGS does not end with NUL");
    base("relu")->tensors[0].name = 5000;
    emit("tensor_name_range", "TENSORS entry 0 '?'");
    base("relu")->tensors[1].role = SPY_ROLE_INPUT;
    B.tensors[0].role = SPY_ROLE_OUTPUT;
    emit("tensor_role_order", "TENSORS entry 1 'y'");
    base("relu")->tensors[0].rank = 9;
    emit("tensor_rank_9", "TENSORS entry 0 'x' (offset");
    base("relu")->tensors[1].dims[1] = -8;
    emit("tensor_dim_negative", "TENSORS entry 1 'y' (offset");
    base("relu")->tensors[0].numel = 33;
    emit("tensor_numel", "TENSORS entry 0 'x' (offset");
    base("relu")->tensors[0].dims[0] = 1LL << 40;
    B.tensors[0].dims[1] = 1LL << 40;
    emit("tensor_dims_overflow", "element count overflows");
    base("relu")->tensors[0].dev_dtype = 7;
    emit("tensor_dev_int64", "host dtype 1 / device dtype 7 not a supported pair");
    base("relu")->tensors[0].host_dtype = 1;
    B.tensors[0].dev_dtype = 3;
    emit("tensor_dtype_pair", "host dtype 1 / device dtype 3 not a supported pair");
    base("relu")->tensors[0].seg = 1;
    emit("tensor_seg_arena", "segment 1 is not an I/O segment");
    base("relu")->tensors[1].name = B.tensors[0].name;
    emit("tensor_dup_name", "share the name 'x'");
    base("relu")->tensors[0].layout = 3;
    emit("tensor_layout", "unknown layout 3");
    base("relu")->segs[0].kind = SPY_SEGK_ARENA;
    emit("seg_kind", "SEGMENTS entry 0");
    base("embed")->segs[0].size = 4;
    emit("seg_const_size", "constant segment size 4 != CONSTS size 320");
    base("relu")->segs[1].size = 1ULL << 50;
    emit("seg_arena_huge", "SEGMENTS entry 1");
    base("relu")->segs[3].size = 64;
    emit("seg_io_size", "SEGMENTS entry 3");
    base("relu")->segs[2].tensor = 9;
    emit("seg_tensor_range", "SEGMENTS entry 2");
    base("relu")->nsegs = 1;
    emit("seg_only_one", "segment 2 is not an I/O segment (1 segments)");
    base("relu")->programs[3].first_insn = 10000;
    emit("prog_range", "PROGRAMS entry 3");
    base("relu")->programs[5].core = 40;
    emit("prog_core_40", "core 40 past the last core 31");
    base("relu")->programs[5].core = 4;
    emit("prog_core_twice", "core 4 appears twice");
    base("relu")->kernels[0].ncores = 16;
    emit("kernel_ncores", "KERNELS entry 0");
    base("relu")->kernels[0].first_program = 20;
    emit("kernel_programs_range", "KERNELS entry 0");
    base("relu")->sched[0] = 3;
    emit("sched_range", "SCHEDULE entry 0");
    base("relu")->programs[0].ninsns = 3; /* drops core 0's barrier */
    emit("prog_no_barrier", "kernel 0 'k0_relu' core 0 (program 0): does not end with a BARRIER");
    base("relu")->code[1].opcode = ISA_BARRIER; /* VEC -> barrier mid-program */
    memset(&B.code[1], 0, sizeof B.code[1]);
    B.code[1].bar.opcode = ISA_BARRIER;
    emit("barrier_unreachable_code", "core 0 (program 0): has a BARRIER before its end");
    base("relu")->code[3].bar.kernel = 2;
    emit("barrier_other_kernel", "core 0 (program 0): ends with a BARRIER of another kernel");
    base("relu")->selftest.p = NULL;
    buf_put(&B.selftest, "0123456789", 10);
    emit("selftest_size", "section SELFTEST: 10 bytes, the inputs and outputs need 256");
}

/* The relu bundle with a DEBUG section of one valid entry, 't': the output y as kernel
 * 0 leaves it in segment 3; returns that entry (in B.debug) to be damaged. */
static SpyDebugDesc *relu_debug(void)
{
    base("relu");
    SpyDebugDesc d;
    memset(&d, 0, sizeof d);
    d.name = bun_str(&B, "t");
    d.seg = 3;
    d.dtype = ISA_DT_F32;
    d.rank = 2;
    d.dims[0] = 4, d.dims[1] = 8;
    d.strides[0] = 8, d.strides[1] = 1;
    buf_put(&B.debug, &d, sizeof d);
    B.debug_sec = true;
    B.features |= SPY_FEAT_DEBUG;
    return (SpyDebugDesc *)B.debug.p;
}

/* The DEBUG section (spyrun --compare's tensor names): every field of an entry, the
 * feature bit, the section size (checksums right). */
static void debug_section(void)
{
    relu_debug()->offset = 8;
    emit("debug_range", "DEBUG entry 0 't' (offset 6144): byte range [8, 136) outside segment 3");
    relu_debug()->seg = 2;
    emit("debug_seg_input", "segment 2 is not the arena or an output segment");
    relu_debug()->seg = 0;
    emit("debug_seg_const", "segment 0 is not the arena or an output segment");
    relu_debug()->kernel = 7;
    emit("debug_kernel", "DEBUG entry 0 't' (offset 6144): kernel 7 out of range");
    relu_debug()->name = 5000;
    emit("debug_name", "name offset 5000 is not a string of STRINGS");
    relu_debug()->dtype = ISA_DT_U4;
    emit("debug_dtype", "dtype 21 is not one a debug tensor may have");
    relu_debug()->rank = 9;
    emit("debug_rank", "rank 9 above 8");
    relu_debug()->strides[0] = -((int64_t)1 << 62);
    emit("debug_stride_huge", "dims or strides out of range");
    relu_debug()->dims[1] = -1;
    emit("debug_dim_negative", "dims or strides out of range");
    SpyDebugDesc *bc = relu_debug();       /* a broadcast: the range fits, the count not */
    bc->dims[0] = 1 << 20;
    bc->strides[0] = 0;
    emit("debug_numel", "its elements need more bytes than segment 3 has (128)");
    relu_debug()->strides[1] = -1;
    emit("debug_stride_before", "byte range [-28, 100) outside segment 3");
    relu_debug()->reserved[3] = 1;
    emit("debug_reserved", "reserved bytes are not zero");
    SpyDebugDesc copy = *relu_debug();
    buf_put(&B.debug, &copy, sizeof copy);
    emit("debug_dup_name", "DEBUG entries 0 and 1 share the name 't'");
    relu_debug();
    buf_put(&B.debug, "0123456789", 10);
    emit("debug_size", "not a multiple of its 160-byte entries");
    relu_debug();
    B.features = 0;
    emit("debug_no_feature", "feature bit DEBUG is clear but the DEBUG section is there");
    base("relu")->features = SPY_FEAT_DEBUG;
    emit("debug_feature_no_section", "feature bit DEBUG is set but the DEBUG section is missing");
}

/* The reludyn bundle's DIMREFS entry k, to be damaged. */
static SpyDimRef *dimref(int k)
{
    base("reludyn");
    return &((SpyDimRef *)B.dimrefs.p)[k];
}

/* Bounded symbolic dimensions (DIMREFS, the dims input, the feature bit; checksums
 * right). */
static void dimrefs_section(void)
{
    static const struct {                 /* entry k's field at off := v (4 or 8 bytes) */
        int k;
        size_t off, size;
        int64_t v;
        const char *name, *frag;
    } one[] = {
        {0, offsetof(SpyDimRef, tensor), 4, 1, "dimrefs_dims_input",
         "DIMREFS entry 0 (offset 6336): tensor 1 is not a data input"},
        {1, offsetof(SpyDimRef, tensor), 4, 9, "dimrefs_tensor",
         "DIMREFS entry 1 (offset 6368): tensor 9 is not a data input"},
        {0, offsetof(SpyDimRef, axis), 4, 2, "dimrefs_axis", "axis 2 of a rank-2 tensor"},
        {0, offsetof(SpyDimRef, sym), 4, 1, "dimrefs_sym", "symbol 1 of 1"},
        {0, offsetof(SpyDimRef, min), 8, 0, "dimrefs_min", "bounds [0, 4] for an axis of 4"},
        {1, offsetof(SpyDimRef, max), 8, 8, "dimrefs_max", "bounds [1, 8] for an axis of 4"},
        {0, offsetof(SpyDimRef, step), 4, 2, "dimrefs_step",
         "a step without feature DIMSTEP, or a step of 1"},
        {1, offsetof(SpyDimRef, tensor), 4, 0, "dimrefs_twice",
         "a second entry for the same axis"},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        uint8_t *p = (uint8_t *)dimref(one[i].k) + one[i].off;
        int32_t v4 = (int32_t)one[i].v;
        memcpy(p, one[i].size == 4 ? (const void *)&v4 : (const void *)&one[i].v, one[i].size);
        emit(one[i].name, one[i].frag);
    }
    *dimref(0) = (SpyDimRef){2, 1, 0, 0, 1, 8};
    emit("dimrefs_no_input", "a symbol no input axis gives");
    dimref(0);
    buf_put(&B.dimrefs, "0123", 4);
    emit("dimrefs_size", "section DIMREFS: size 68 is not a multiple of its 32-byte entries");
    dimref(0);
    B.features = 0;
    emit("dimrefs_no_feature", "feature DYNDIM not set, section DIMREFS present");
    dimref(0);
    B.dimrefs_sec = false;
    emit("dimrefs_no_section", "feature DYNDIM set, section DIMREFS absent");
    dimref(0);
    B.tensors[1].flags = 0;
    emit("dimrefs_no_dims_input", "dims input absent");
    dimref(0);
    B.tensors[1].rank = 2;
    B.tensors[1].dims[1] = 1;
    emit("dimrefs_dims_dtype", "dims input 'dims': not int32[1..64]");
    dimref(0);
    B.tensors[0].flags = SPY_TF_DIMS;
    emit("dimrefs_dims_not_last", "a dims input that is not the last input");
}

/* Instructions of core 0 of the relu bundle (checksums right). */
static void insns(void)
{
#define INSN(i) (base("relu")->code[i])
    INSN(0).opcode = 200;
    emit("insn_unknown_opcode", "kernel 0 'k0_relu' core 0 instruction 0 (CODE 0, offset");
    INSN(1).opcode = ISA_OPCODE_COUNT;
    emit("insn_opcode_10", "core 0 instruction 1 (CODE 1");
    INSN(0).dma.esize = 3;
    emit("insn_load_esize", "LOAD esize 3");
    INSN(0).dma.lx = 1677721 - 64;
    emit("insn_load_lx_range", "LOAD LX range");
    INSN(0).dma.dram_off = 1000;
    emit("insn_load_dram_range", "LOAD DRAM range [1000, 1128) outside segment 2 (128 bytes)");
    INSN(0).dma.dram_off = -4;
    emit("insn_load_dram_negative", "LOAD DRAM range [-4, 124)");
    INSN(0).dma.dram_stride[0] = -8;
    emit("insn_load_stride_negative", "LOAD DRAM range [-96, 32)");
    INSN(0).dma.seg = 99;
    emit("insn_load_seg_99", "LOAD segment 99 out of range");
    INSN(2).dma.seg = 0;
    emit("insn_store_const", "STORE into the constant segment 0");
    INSN(2).dma.seg = 2;
    emit("insn_store_input", "STORE into segment 2 of input 'x'");
    INSN(0).dma.ndim = 7;
    emit("insn_load_ndim_7", "LOAD ndim 7 > 6");
    INSN(0).dma.dims[4] = 2;
    emit("insn_load_unused_dim", "LOAD unused dims[4] = 2");
    INSN(0).dma.dims[0] = 1u << 20;
    B.code[0].dma.dims[0] = 1u << 20;
    B.code[0].dma.dims[1] = 1u << 20;
    emit("insn_load_2e40_elems", "LOAD moves more than 2^32 elements");
    INSN(0).dma.flags = 0x20;
    emit("insn_load_flags", "LOAD unknown flags 0x20");
    INSN(0).dma.flags = ISA_F_RING;        /* over the ring, without the feature bit */
    emit("insn_load_ring_feature", "LOAD over the ring in a bundle without feature bit");
    INSN(0).dma.flags = ISA_F_F32;         /* the float32 <-> DLFloat16 conversion */
    emit("insn_load_f32_esize", "LOAD float32 <-> DLFloat16 conversion with esize 4");
    /* a LOAD inside a 4 MiB arena whose rows span more than a 1 MiB core window */
    base("relu")->target.core_window_mib = 1;
    B.segs[1].size = 4u << 20;
    B.code[0].dma.seg = 1;
    B.code[0].dma.dram_stride[0] = 1 << 18;
    emit("insn_load_window", "LOAD DRAM range [0, 3145760) of segment 1 spans more than the "
                             "core's 1 MiB window");
}

/* Compute instructions of core 0 of the relu bundle (checksums right). */
static void insns_compute(void)
{
    INSN(1).vec.fn = 999;
    emit("insn_vec_fn_999", "VEC unknown function 999");
    INSN(1).vec.nsrc = 2;
    emit("insn_vec_nsrc", "nsrc 2");
    INSN(1).vec.dtype = 7;
    B.code[1].vec.src_dtype = 7;
    emit("insn_vec_int64", "core 0 instruction 1 (CODE 1");
    INSN(1).vec.dst = 1677721;
    emit("insn_vec_dst_range", "VEC dst LX range");
    INSN(1).vec.src_rs[0] = -100;
    emit("insn_vec_src_negative", "VEC src[0] LX range");
    INSN(1).vec.rows = 100000;
    B.code[1].vec.cols = 100000;
    emit("insn_vec_huge", "processes more than 2^32 elements");
    INSN(1).vec.flags = ISA_F_IMM | ISA_F_IMM_A;
    emit("insn_vec_flags", "has both IMM and IMM_A");
    /* instructions swapped in for the VEC */
    SpyInsn in;
    memset(&in, 0, sizeof in);
    in.mm.opcode = ISA_MATMUL;
    in.mm.dtype = in.mm.out_dtype = ISA_DT_F32;
    in.mm.a = 0, in.mm.b = 0, in.mm.c = 64;
    in.mm.m = 4, in.mm.n = 4, in.mm.k = 4;
    in.mm.lda = in.mm.ldb = in.mm.ldc = 8;
    INSN(1) = in;
    emit("insn_matmul_overlap", "MATMUL C overlaps an operand");
    in.mm.c = 1024;
    in.mm.dtype = in.mm.out_dtype = ISA_DT_F16;
    INSN(1) = in;
    emit("insn_matmul_f16", "MATMUL dtype");
    in.mm.dtype = in.mm.out_dtype = ISA_DT_F32;
    in.mm.m = 1u << 20;
    INSN(1) = in;
    emit("insn_matmul_lx_range", "MATMUL A LX range");
    in.mm.m = 4;
    in.mm.flags = ISA_F_BWIN;               /* B an implicit-GEMM window (isa.md) */
    in.mm.ldb = 0;
    in.mm.bw_kext[0] = 2, in.mm.bw_kext[1] = 1, in.mm.bw_kext[2] = 2;
    in.mm.bw_ks[0] = 100, in.mm.bw_ks[2] = 1;
    in.mm.bw_next[0] = 2, in.mm.bw_next[1] = 2;
    in.mm.bw_ns[0] = 10, in.mm.bw_ns[1] = 1;
    in.mm.b = 2048;
    INSN(1) = in;
    emit("insn_matmul_bwin_feature", "without the BWIN feature bit");
    in.mm.bw_ns[0] = 1 << 24;
    INSN(1) = in;
    emit_feat("insn_matmul_bwin_range", "MATMUL B window LX range", SPY_FEAT_BWIN);
    in.mm.bw_ns[0] = 10;
    in.mm.bw_next[1] = 3;
    INSN(1) = in;
    emit_feat("insn_matmul_bwin_extents", "MATMUL B window: extents", SPY_FEAT_BWIN);
    memset(&in.mm.bw_kext, 0, sizeof in.mm - offsetof(SpyMatmul, bw_kext));
    in.mm.flags = ISA_F_BF8;                /* B float8 e4m3 (fp8 weights, isa.md) */
    in.mm.dtype = ISA_DT_DLF16;
    in.mm.ldb = 4;
    INSN(1) = in;
    emit("insn_matmul_bf8_feature", "without the FP8W feature bit");
    in.mm.dtype = ISA_DT_F32;
    INSN(1) = in;
    emit_feat("insn_matmul_bf8_dtype", "needs dtype dlf16 and no BWIN", SPY_FEAT_FP8W);
    in.mm.dtype = ISA_DT_DLF16;
    in.mm.flags = ISA_F_BF8 | ISA_F_BWIN;
    INSN(1) = in;
    emit_feat("insn_matmul_bf8_bwin", "needs dtype dlf16 and no BWIN",
              SPY_FEAT_FP8W | SPY_FEAT_BWIN);
    in.mm.flags = ISA_F_BF8;
    in.mm.b = 0xfffffff0u;
    INSN(1) = in;
    emit_feat("insn_matmul_bf8_range", "MATMUL B LX range", SPY_FEAT_FP8W);
    memset(&in, 0, sizeof in);
    in.red.opcode = ISA_VREDUCE;
    in.red.dtype = ISA_DT_F32;
    in.red.fn = 42;
    in.red.rows = 4, in.red.len = 8, in.red.src_rs = 8, in.red.src_cs = 1, in.red.dst_rs = 1;
    in.red.dst = 512;
    INSN(1) = in;
    emit("insn_vreduce_fn", "VREDUCE unknown function 42");
    in.red.fn = ISA_RF_ARGMAX;
    in.red.flags = ISA_F_ACCUM;
    INSN(1) = in;
    emit("insn_vreduce_argmax_accum", "VREDUCE ACCUM is not allowed");
    memset(&in, 0, sizeof in);
    in.fill.opcode = ISA_VFILL;
    in.fill.dtype = ISA_DT_F32;
    in.fill.dst = 256;
    in.fill.n = 1u << 30;
    INSN(1) = in;
    emit("insn_vfill_range", "VFILL LX range");
    in.fill.n = 4;
    in.fill.dtype = 7;
    INSN(1) = in;
    emit("insn_vfill_dtype", "VFILL dtype 7 not supported");
    memset(&in, 0, sizeof in);
    in.scan.opcode = ISA_VSCAN;
    in.scan.dtype = ISA_DT_BOOL;
    in.scan.rows = 1, in.scan.len = 4;
    INSN(1) = in;
    emit("insn_vscan_bool", "VSCAN dtype");
    /* gather: table bound past the constants */
    base("embed")->code[1].gather.bound = 11;
    emit("insn_gather_bound", "GATHER table DRAM range [0, 352) outside segment 0 (320 bytes)");
    base("embed")->code[1].gather.lx_idx = 1677720;
    emit("insn_gather_idx_range", "GATHER index LX range");
    base("embed")->code[1].gather.esize = 5;
    emit("insn_gather_esize", "GATHER esize 5");
}

#undef INSN

/* Bundles that say they were built for target parameters that do not fit. */
static void targets(void)
{
    base("relu")->target.cores = 0;
    emit("target_cores_0", "target parameters unusable: cores outside 1..1024");
    base("relu")->target.cores = 5000;
    emit("target_cores_5000", "target parameters unusable");
    base("relu")->target.lx_budget_bytes = B.target.lx_bytes + 1;
    emit("target_lx_budget", "lx_budget_bytes must be in");
    base("relu")->target.clock_mhz = 0;
    emit("target_clock_0", "target parameters unusable");
    base("relu")->target.overlap_permille = 2000;
    emit("target_overlap", "overlap_permille above 1000");
    base("relu")->target.core_window_mib = 0;
    emit("target_window_0", "core_window_mib must be positive");
    base("relu");
    memset(B.target.name, 'A', sizeof B.target.name);
    emit("target_name_unterminated", "name is not NUL-terminated");
    /* built for a 16-core target: the kernels still have 32 programs */
    base("relu")->target.cores = 16;
    emit("target_16_cores", "core 16 past the last core 15");
    /* built for a smaller scratchpad than the programs use */
    base("relu")->target.lx_budget_bytes = 200;
    emit("target_small_lx", "VEC dst LX range [256, 384) outside the scratchpad budget [0, 200)");
    base("relu")->target.lx_budget_bytes = 200;
    B.code[0].dma.lx = 100;
    emit("target_small_lx_2", "outside the scratchpad budget [0, 200)");
}

/* B := reludyn (x f32[1..4, 8]) whose VARIANTS section holds bucket s (freed here). */
static void with_bucket(Bun *s)
{
    base("reludyn");
    bun_add_bucket(&B, s);
}

/* A reludyn bucket of bound n, to be edited and passed to with_bucket. */
static Bun *bucket(uint32_t n)
{
    Bun *s = calloc(1, sizeof *s);
    bun_reludyn_n(s, n);
    return s;
}

/* Size buckets (the VARIANTS section, its bucket bundles, the feature bit). */
static void variants_section(void)
{
    base("relubuckets")->features &= ~SPY_FEAT_VARIANTS;
    emit("variants_no_feature", "feature VARIANTS not set, section VARIANTS present");
    base("reludyn")->features |= SPY_FEAT_VARIANTS;
    emit("variants_no_section", "feature VARIANTS set, section VARIANTS absent");
    base("relubuckets");
    Buf v = buf_copy(&B.variants);
    base("relu");
    B.variants = v;
    B.variants_sec = true;
    B.features |= SPY_FEAT_VARIANTS;
    emit("variants_static", "0 symbols: the bit and the section go together");
    base("relubuckets");
    ((SpyVariantsHead *)B.variants.p)->count = 0;
    emit("variants_count", "count 0 outside 1..255");
    base("relubuckets");
    ((SpyVariantsHead *)B.variants.p)->count = 3;
    emit("variants_count_3", "bundle [128, +6400) before the end of the table");
    base("relubuckets");
    ((SpyVariantsHead *)B.variants.p)->reserved[3] = 1;
    emit("variants_head_reserved", "reserved head bytes not zero");
    SpyVariantDesc *d;
    base("relubuckets");
    d = (SpyVariantDesc *)(B.variants.p + sizeof(SpyVariantsHead));
    d->reserved[1] = 7;
    emit("variants_entry_reserved", "entry 0 (offset");
    base("relubuckets");
    d = (SpyVariantDesc *)(B.variants.p + sizeof(SpyVariantsHead));
    d->offset += 8;
    emit("variants_misaligned", "bundle [136, +6400) not 64-byte aligned");
    base("relubuckets");
    d = (SpyVariantDesc *)(B.variants.p + sizeof(SpyVariantsHead));
    d->size += 64;
    emit("variants_past_end", "bundle [128, +6464) past the end of the section");
    base("relubuckets");
    B.variants.p[128 + 2000] ^= 0x10;      /* inside the bucket's payloads */
    emit("variants_bucket_crc", "VARIANTS entry 0 (bundle at offset");
    Bun *s = bucket(2);
    uint32_t c = 0;
    buf_put(&s->consts, &c, 4);
    s->segs[0].size = 4;
    with_bucket(s);
    emit("variants_bucket_consts", "section CONSTS of a size bucket is not empty (4 bytes)");
    s = bucket(2);
    s->segs[0].size = 64;
    with_bucket(s);
    emit("variants_bucket_seg0", "constant segment size 64 != CONSTS size 0");
    with_bucket(bucket(8));
    emit("variants_bucket_bigger", "tensor 0 'x' differs from the bundle's");
    s = bucket(2);
    ((SpyDimRef *)s->dimrefs.p)[0].min = 2;
    ((SpyDimRef *)s->dimrefs.p)[1].min = 2;
    with_bucket(s);
    emit("variants_bucket_min", "DIMREFS entry 0 differs from the bundle's");
    s = bucket(2);
    bun_add_bucket(s, bucket(1));
    with_bucket(s);
    emit("variants_bucket_nested", "(a bucket)");
    s = bucket(2);
    s->target.cores = 16;
    with_bucket(s);
    emit("variants_bucket_target", "VARIANTS entry 0 (bundle at offset");
}

void gen_sbin(void)
{
    reference_bundles();
    container();
    bit_flips();
    sections();
    tables();
    debug_section();
    dimrefs_section();
    variants_section();
    insns();
    insns_compute();
    targets();
    bun_free(&B);
}
