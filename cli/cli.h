/* cli.h: helpers of the command-line tools, one file each:
 *   cli/spyrec_io.c        reading .ir text, atomic writes of every output
 *   cli/spyrec_deps.c      make dependency files (spyrec -MD -MF)
 *   cli/spyrec_dot.c       Graphviz rendering of the IR (spyrec --emit=dot)
 *   cli/spyrec_report.c    the machine-readable compile report (spyrec --report)
 *   cli/spyrec_progress.c  pass progress on a terminal
 *   cli/spyrun_trace.c     Chrome-trace / Perfetto JSON of a run (spyrun --trace)
 *   cli/spyrun_seq.c       sequence / optional inputs and goldens (spyrun)
 *   cli/spyrun_metrics.c   accuracy metrics and --metric thresholds (spyrun --check)
 *   cli/spyrun_profile.c   the per-kernel profile table (spyrun --profile)
 *   cli/spyrec_seq.c       --input-shape NAME=N:D0xD1,...|none (spyrec)
 *   cli/spyrec_cache.c     the compile cache (spyrec --cache-dir)
 *   cli/spyrec_cachestat.c its records of file digests by stat
 *   cli/spyrec_cacheevict.c its bound (--cache-max): least recently used first
 *   cli/spyrec_hash.c      SHA-256, the hash of the cache's keys
 * The spyrec_* files link into spyrec, spyrun_* into spyrun (see the Makefile).
 */
#ifndef SPYREC_CLI_H
#define SPYREC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "spyrt.h"
#include "target.h"

/* ---- cli/spyrec_io.c ---- */
/* One piece of a file written by cli_write_atomic_parts. */
typedef struct {
    const void *data;
    size_t len;
} CliPart;
/* Write all of buf to fd (in pieces, again after EINTR); false with errno set on
 * failure. */
bool cli_write_all(int fd, const void *buf, size_t len);
/* Write the parts, one after the other, to path atomically (as cli_write_atomic). */
bool cli_write_atomic_parts(const char *path, const CliPart *parts, int nparts);
/* Write buf to path atomically (temporary file in the same folder, fsync, rename);
 * "-" is standard output. Prints "spyrec: PATH: ..." and returns false on failure. */
bool cli_write_atomic(const char *path, const void *buf, size_t len);
/* An open file whose bytes from off to its end are the bytes of a buffer mapped from
 * it (a compile-cache entry's output), so that they can be cloned; fd -1: none. path:
 * the file's name when the output may be a hard link to it (off 0), else NULL. */
typedef struct {
    int fd;
    uint64_t off;
    const char *path;
} CliSource;
/* Which file a name stood for when it was checked: device, inode, size. */
typedef struct {
    uint64_t dev, ino, size;
} CliFileId;
/* The identity of the regular file open as fd; false when fd is not one. */
bool cli_file_id(int fd, CliFileId *id);
/* Hard-link src to name (which must not exist), keeping the link only when it is the
 * file id (src may have been replaced meanwhile). False, nothing made, otherwise or
 * when the link is refused (another file system, ...). */
bool cli_link_checked(const char *src, const char *name, const CliFileId *id);
/* The same for a page-aligned buf that already lies in the page cache (a mapped file,
 * as a compile-cache hit has) and must have CRC32C crc: where src.path names buf's
 * file, which is all of buf, and a hard link to it can be made next to path, the
 * output becomes that file (nothing is written; an output that is that file already
 * stays); else where the file system can clone (FICLONERANGE: btrfs, XFS) and src names buf's file, the file shares src's
 * blocks (copy on write: nothing is written); else its whole pages go to the file
 * with direct I/O, so they are neither copied into the page cache a second time nor
 * written back by the fsync (where the file system has no direct I/O: as
 * cli_write_atomic). Either way a second thread checks the CRC of buf. When it
 * differs, *damaged is set, the temporary file is removed and path is left as it
 * was. */
bool cli_write_atomic_checked(const char *path, const void *buf, size_t len, uint32_t crc,
                              CliSource src, bool *damaged);
/* cli_write_atomic_checked in two halves, so that the write runs while the caller
 * works out whether it wants it (a compile-cache hit's guessed entry, spyrec.c): a
 * thread writes buf to a temporary file next to path, another checks its CRC.
 * NULL (message printed) when the temporary file cannot be made. Not for "-". */
typedef struct CliWriter CliWriter;
CliWriter *cli_write_begin(const char *path, const void *buf, size_t len, uint32_t crc,
                           CliSource src);
/* Wait for it and free w. keep: when the CRC matched, fsync and rename over path (false
 * with a message when that fails), else set *damaged and leave path as it was; !keep:
 * stop the write early and remove the temporary file. */
bool cli_write_end(CliWriter *w, bool keep, bool *damaged);
/* Start writing path atomically: a temporary file next to it, whose descriptor is
 * returned (-1, message printed, on failure). Not for "-". */
int cli_atomic_open(const char *path);
/* The temporary file's name (the last cli_atomic_open's). */
const char *cli_atomic_tmp_path(void);
/* cli_atomic_open for a bundle (spyrec_reuse.c): the descriptor may be the old output's
 * own file, moved to the temporary name, whose blocks the new bundle overwrites; the
 * caller cuts it to the written length. Otherwise the old output is removed now and
 * freed meanwhile (cli_io_release_early). */
int cli_atomic_open_bundle(const char *path);
/* Finish it: with err == 0 close (fsync first under cli_io_durable) and rename over path; otherwise (err: the
 * errno of a failed write) or on failure remove it. Prints "spyrec: PATH: cannot
 * write: ..." and returns false on failure. */
bool cli_atomic_close(const char *path, int fd, int err);
/* --fsync: fsync each output before its rename (off by default). */
void cli_io_durable(bool on);
/* Remove the temporary file of a write cut short (out of memory). */
void cli_io_abandon(void);
/* Remove the regular file path names now (an output about to be written anew) and
 * free its blocks in a thread, as cli_atomic_close does for the file it replaces; a
 * path that is not a regular file is left alone. */
void cli_io_release_early(const char *path);
/* Wait for the release of the outputs replaced so far (cli_atomic_close closes them
 * in a thread); before the process exits. */
void cli_io_finish(void);
/* Remove it on SIGINT, SIGTERM and SIGHUP too. */
void cli_io_signals(void);
/* A whole text file (.ir models), NUL-terminated and malloc'd; NULL with the reason
 * in diag. */
char *cli_read_text(const char *path, IrDiag *diag);

/* ---- cli/spyrec_deps.c ---- */
/* Text of a make dependency file: "TARGET: PREREQ..." (one prerequisite per
 * continuation line) then an empty rule per prerequisite, so that make does not fail
 * when one of them disappears (like gcc -MP). Names are escaped for make. NULL when
 * out of memory. */
char *cli_deps_text(const char *target, const char *const *prereqs, int n);
/* Absolute path of the running program (/proc/self/exe, else argv0 resolved through
 * the current folder or PATH); malloc'd, NULL if it cannot be found. */
char *cli_self_path(const char *argv0);
/* The dependency file gcc -MD would pick for output OUT: OUT with its extension
 * replaced by ".d" (malloc'd). */
char *cli_deps_default_path(const char *out);

/* ---- cli/spyrec_dot.c ---- */
/* Graphviz digraph of g: one box per live node labelled with its op and output
 * types, graph inputs, constants and outputs as their own shapes, and (once the fuse
 * pass ran) every kernel as a cluster. Deterministic. */
void cli_dot_print(IrGraph *g, FILE *f, const char *title);

/* ---- cli/spyrec_progress.c ---- */
/* Progress lines on standard error ("[pass 8/12 fuse]", rewritten with \r) when it
 * is a terminal and enabled is true; silent otherwise. */
void cli_progress_init(bool enabled, int opt_level);
void cli_progress_stage(const char *what);      /* "load", "codegen", ... */
void cli_progress_pass(int index);              /* pass_pipeline index starting */
void cli_progress_clear(void);                  /* erase the line before other output */

/* ---- cli/spyrec_report.c ---- */
typedef struct CliReport CliReport;

/* What the driver knows at the end of a compile. */
typedef struct {
    const char *compiler;          /* "spyrec 0.1.0" */
    const char *model;
    const char *output;            /* NULL when none */
    const char *emit;              /* "sbin", "ir", "asm", "dot" */
    const char *flags;             /* as stored in the bundle */
    int opt_level;
    const SpyTarget *target;       /* NULL when the target could not be loaded */
    const char *target_path;       /* NULL: built-in */
    int exit_status;
    const IrDiag *diag;            /* every diagnostic of the compile */
    IrGraph *g;                    /* NULL when loading failed or on out of memory */
    const uint8_t *bundle;         /* NULL unless a bundle was emitted */
    size_t bundle_len;
    const char *cache;             /* "off", "miss" or "hit" (--cache-dir) */
    const char *cache_key;         /* the cache key in hex, NULL when not known */
    double fp16_whatif_us;         /* modelled time compiled with --precision=fp16, < 0:
                                      not computed (fp16 compile, no bundle, failure) */
    const struct PassQuant *quant; /* --precision=int8: the calibration, else NULL */
    const struct PassFp8Calib *fp8cal; /* --precision=fp8 --calibrate, else NULL */
    const char *calib_method;      /* "minmax" or "percentile" */
    int calib_sets;                /* --calibrate folders */
    double calib_seconds;
} CliReportInfo;

CliReport *cli_report_new(void);   /* NULL when out of memory */
void cli_report_free(CliReport *r);
/* Pass observer (PassOptions.hook): operator counts before and after decompose,
 * passes run, their times. */
void cli_report_pass(CliReport *r, IrGraph *g, int index, bool done);
/* Build the JSON report and write it atomically to path; false (message printed)
 * when it cannot be written. */
bool cli_report_write(CliReport *r, const char *path, const CliReportInfo *info);

/* ---- cli/spyrun_trace.c ---- */
/* Write a Chrome-trace / Perfetto JSON of the last run of s (a profiling session of
 * m): the host timeline per kernel and host thread (pid 1 "host") and the modelled
 * device timeline per core (pid 2 "device", tid = core). Atomic; false with a message
 * in err on failure. */
bool cli_trace_write(const char *path, const spy_model *m, const spy_session *s,
                     const char *bundle_name, char *err, size_t errlen);

/* ---- cli/spyrun_profile.c ---- */
/* Print the per-kernel profile table of the last run of s (a profiling session of m),
 * kernels sorted by lost time (modelled minus roofline), then the totals. */
void cli_print_profile(const spy_model *m, const spy_session *s);

/* ---- cli/spyrun_load.c ---- */
/* spy_model_load_file, timed: with stats, prints `load_ms=... rss_mib=... bundle_mib=...`
 * (load wall time, resident memory after the load, bundle size) on success. */
spy_status cli_load_model(const char *path, bool stats, spy_model **m, char *err,
                          size_t errlen);

/* ---- cli/spyrec_seq.c ---- */
struct FeSeq;
/* The structure of a sequence or optional input given as text: "N:D0xD1,D0xD1,..."
 * (N tensors of those shapes; an empty shape is a scalar) or "none" (an optional
 * without a value). Returns 1 and fills *s (free with fe_seq_free), 0 when text has
 * neither form (a plain shape), -1 when it is malformed. */
int cli_seq_parse(const char *text, struct FeSeq *s);

/* ---- cli/spyrec_hash.c ---- */
#define CLI_HASH_BYTES 32          /* digest of the cache's keys: SHA-256 */
/* A SHA-256 hash being computed. */
typedef struct {
    uint32_t h[8];                 /* chained state */
    uint64_t total;                /* bytes hashed so far */
    uint8_t buf[64];               /* the block being filled */
    size_t n;                      /* bytes in buf */
} CliHash;
void cli_hash_init(CliHash *h);
void cli_hash_update(CliHash *h, const void *data, size_t n);
/* Write the CLI_HASH_BYTES digest to out; h is spent. */
void cli_hash_final(CliHash *h, uint8_t *out);
/* The digests of 16 messages of len bytes each (p[0..16)), hashed side by side in the
 * lanes of AVX-512 registers: about twice as fast as one at a time with the SHA
 * extensions. False (nothing written) where the processor has no AVX-512. */
bool cli_hash_x16(const uint8_t *const *p, size_t len, uint8_t (*out)[CLI_HASH_BYTES]);
/* Tests: compress with the portable code even where the SHA extensions exist. */
void cli_hash_use_portable(bool on);
/* Hash one field of a key: its tag (with its NUL), its byte count, its bytes; fields
 * so delimited cannot run into each other. */
void cli_hash_field(CliHash *h, const char *tag, const void *data, size_t n);
/* n digest bytes as 2n lower-case hex digits and a NUL into hex. */
void cli_hash_hex(const uint8_t *digest, size_t n, char *hex);
/* cli/spyrec_hashfiles.c: digest[i] := the digest of file paths[i] (SHA-256 of its
 * size and of the SHA-256 of each 1 MiB piece, the pieces hashed by up to four threads), and
 * ok[i] whether it could be read. False when out of memory. */
bool cli_hash_files(const char *const *paths, int n, uint8_t (*digest)[CLI_HASH_BYTES],
                    bool *ok);

/* ---- cli/spyrec_cache.c ---- */
struct FeFileList;
typedef enum { CLI_CACHE_OFF, CLI_CACHE_MISS, CLI_CACHE_HIT } CliCacheStatus;

/* What the key of a compile covers, and where the cache is. */
typedef struct {
    const char *dir;               /* cache folder; NULL: no cache */
    uint64_t max_bytes;            /* --cache-max: bound of the folder, 0: none */
    const char *model;             /* the model file as given */
    const char *model_name;        /* the part of its path the output may show */
    const char *flags;             /* the flags recorded in the bundle */
    const char *target_path;       /* --target file, NULL: the built-in target */
    const char *const *inputs;     /* --bind / --input-seq files, in order */
    int ninputs;
    const char *argv0;             /* to find the compiler when /proc is absent */
    const char *version;           /* the compiler's version string */
    bool link;                     /* outputs may be hard links to entries (a bundle
                                    * file, no --cache-copy; spyrec_cache.c) */
} CliCacheSpec;

/* An output file as written (a bundle streamed to its file), which a cache entry may
 * share by a hard link: its path and the file it was then. path NULL: none. */
typedef struct {
    const char *path;
    CliFileId id;
} CliOutFile;

/* One compile's use of the cache. */
typedef struct {
    CliCacheStatus status;
    char key[2 * CLI_HASH_BYTES + 1];  /* hex key of the entry; "" when not known */
    const uint8_t *out;            /* a hit: the output bytes (KEY.out, mapped) */
    size_t out_len;
    CliSource out_src;             /* a hit: KEY.out, open (offset 0) */
    const uint8_t *guess_out;      /* cli_cache_guess: the likely output, or NULL */
    size_t guess_len;
    uint32_t guess_crc;            /* the CRC32C guess_out must have */
    CliSource guess_src;           /* its file, open (offset 0) */
    bool guess_right;              /* a hit whose output is guess_out */
    /* private to spyrec_cache.c */
    CliCacheSpec spec;
    CliHash base;                  /* the key so far, without the external data */
    uint32_t out_crc;              /* a hit: the CRC32C the output must have */
    char *out_path;                /* a hit: its file, KEY.out */
    uint8_t key_bytes[CLI_HASH_BYTES];  /* the key, once key[] is set */
    uint8_t hint_key[CLI_HASH_BYTES];   /* names the .hint file */
    uint8_t guess_key[CLI_HASH_BYTES];  /* the key the hint names */
    char *guess_path;              /* its KEY.out (until the lookup takes it) */
    bool have_manifest;            /* the list of external data files was found */
    bool unkeyed;                  /* an input could not be hashed: store nothing */
} CliCache;

/* Start a lookup (status OFF when s->dir is NULL or the folder cannot be made, else
 * MISS): read the hint of a compile named as this one, without reading any input, and
 * when it names a sound entry set c->guess_out / guess_len / guess_crc to its output,
 * which the caller may start writing (cli_write_begin) during cli_cache_lookup. */
void cli_cache_guess(CliCache *c, const CliCacheSpec *s);
/* Compute the key of the compile and look its entry up. On a hit, c->out holds the
 * output to write (c->guess_right: the guessed one), the warnings of the original
 * compile are added to diag, and files receives the model's external data files (for
 * -MD). A damaged entry is removed, reported, and counts as a miss. */
CliCacheStatus cli_cache_lookup(CliCache *c, IrDiag *diag, struct FeFileList *files);
/* After a successful compile that missed: store its output (out; of: the output file,
 * which the entry then shares by a hard link where s->link allows and the file system
 * can, else copied), its warnings and the external data files the frontend read
 * (files), then evict the least recently used entries past s->max_bytes. A failure to
 * store is only a warning. */
void cli_cache_store(CliCache *c, const void *out, size_t len, const CliOutFile *of,
                     const IrDiag *diag, const struct FeFileList *files);
void cli_cache_free(CliCache *c);
/* A hit whose output failed its CRC while it was written (cli_write_atomic_checked):
 * report it, remove the entry and make the status a miss (the compile then runs and
 * stores a new one). */
void cli_cache_damaged(CliCache *c);
/* cli/spyrec_cacheevict.c: remove the least recently used cache files of the folder dir
 * (an entry's KEY.entry and KEY.out together) until it holds at most max bytes of them,
 * and temporary files an hour old. */
void cli_cache_evict(const char *dir, uint64_t max);
/* Kinds of cache file (spyrec_cache.c): KEY.files, KEY.entry, KEY.hint, KEY.stat (KEY.out
 * has no header). */
enum { CLI_CACHE_FILES = 1, CLI_CACHE_ENTRY, CLI_CACHE_HINT, CLI_CACHE_STAT };
/* Map the cache file path of the given kind and key, checked (magic, version, kind,
 * length, key, CRCs): the mapping (*size bytes) with its payload in *payload / *len,
 * or NULL with *damaged telling whether the file was there but failed a check. */
uint8_t *cli_cache_map_file(const char *path, uint32_t kind, const uint8_t *key, size_t *size,
                            const uint8_t **payload, size_t *len, bool *damaged);
/* Write a cache file atomically: the header, then the payload parts (at most 7), of
 * which the first ncrc are covered by the header's CRC. */
bool cli_cache_write_file(const char *path, uint32_t kind, const uint8_t *key,
                          const CliPart *payload, int nparts, int ncrc);
/* cli/spyrec_cachestat.c: cli_hash_files, but a file of the cache folder dir's stat
 * records (size, times, inode) whose stat matches is not read again; records are
 * written for files that have settled. dir NULL: cli_hash_files. */
bool cli_cache_hash_files(const char *dir, const char *const *paths, int n,
                          uint8_t (*digest)[CLI_HASH_BYTES], bool *ok);
/* How long (ns) a file must have been left unchanged before its record is written
 * (2 s; tests). */
void cli_cache_stat_settle(int64_t ns);
/* A size "512M", "2G", "64K", "1T" (powers of 1024; a trailing "B" or "iB" is
 * allowed) or plain bytes into *bytes; false when malformed or zero. */
bool cli_cache_parse_size(const char *text, uint64_t *bytes);

/* ---- cli/spyrun_seq.c ---- */
struct FeTensor;
/* Element index k of a bundle tensor named "BASE[k]" (BASE copied into base, at most n
 * bytes with the NUL); -1 if the name has another form. */
int cli_seq_element(const char *name, char *base, size_t n);
/* Whether some input of m is an element "BASE[k]" of a sequence or optional. */
bool cli_seq_any_input(const spy_model *m);
/* Element k of the SequenceProto / OptionalProto file path into *t (the caller owns
 * it). The file is read once for all its elements; cli_seq_cache_free releases it.
 * false with "path: message" in err. */
bool cli_seq_take(const char *path, int k, struct FeTensor *t, char *err, size_t errlen);
void cli_seq_cache_free(void);
/* One spyrun --input NAME=FILE. */
typedef struct {
    const char *name;              /* input name (or index) before '=' */
    const char *file;
} CliInputArg;
/* Input i named "BASE[k]" (an element of a sequence or optional input) that no --input
 * names: element k of the SequenceProto / OptionalProto file given by --input
 * BASE=FILE, or found by its name among dir's input_J.pb. Returns 1 and fills *t (or
 * prints why not and sets *failed); 0 if input i is not such an input. */
int cli_seq_element_input(const CliInputArg *args, int nargs, const char *dir, int i,
                          const char *name, struct FeTensor *t, bool *failed);
/* DIR/input_J.pb holding a sequence or optional named base (malloc'd), or NULL. */
char *cli_seq_find_file(const char *dir, const char *base);
/* spyrun --describe of a SequenceProto / OptionalProto file: prints
 * "name<TAB>sequence(DTYPE)<TAB>N:D0xD1,D0xD1,..." or "name<TAB>optional<TAB>none"
 * (the form spyrec --input-shape takes). false if path holds neither. */
bool cli_seq_describe(const char *path);

/* The goldens of --check DIR lined up with the bundle's outputs, when some golden is a
 * sequence or an optional: exp[k] is what output k is compared with (label[k] names
 * the file and element). Goldens holding no tensor (an empty optional or sequence)
 * have no output. */
typedef struct {
    int n;                         /* the bundle's outputs */
    struct FeTensor *exp;
    char **label;
} CliGoldens;
/* *out = NULL when every golden is a tensor file (outputs and output_K.pb then match
 * by position). Returns 0 or an exit status (message printed). */
int cli_seq_goldens(const char *dir, const spy_model *m, CliGoldens **out);
void cli_seq_goldens_free(CliGoldens *g);

/* ---- cli/spyrun_compare.c ---- */
/* spyrun A --compare B: load B (path_b), check it has A's inputs, read them with
 * load(ctx, ma, ins), run both bundles and print the errors of A against B per tensor
 * named in both, worst first. Returns the exit status. */
int cli_compare_files(const char *path_a, const spy_model *ma, const char *path_b, int threads,
                      int (*load)(const void *ctx, const spy_model *m, struct FeTensor *ins),
                      const void *ctx);

/* ---- cli/spyrun_metrics.c ---- */
/* Element i of a host buffer of dtype dt (IrDType) as a double. */
double cli_elem_f(int dt, const void *p, size_t i);

/* Accuracy metrics of one output against its golden (cli_metrics). */
typedef struct {
    double rel_l2;                 /* ||got - exp|| / ||exp|| */
    double cosine;                 /* got . exp / (||got|| ||exp||) */
    bool has_top1;                 /* the last axis has at least 2 elements */
    size_t top1_agree;             /* counted rows whose top-1 index agrees */
    size_t top1_rows;              /* rows counted: golden top-1 and top-2 >= 1% apart */
    size_t top1_ambiguous;         /* rows left out */
} CliMetrics;
void cli_metrics(int dt, const void *got, const void *exp, size_t n, int64_t row_len,
                 CliMetrics *m);

/* Pass thresholds of --metric NAME=VALUE (repeatable). */
enum { CLI_MET_REL_L2, CLI_MET_COSINE, CLI_MET_TOP1, CLI_MET_COUNT };
typedef struct {
    bool set[CLI_MET_COUNT];
    double thr[CLI_MET_COUNT];     /* rel-l2 at most, cosine at least, top1 fraction at least */
} CliMetricSpec;
bool cli_metric_parse(const char *s, CliMetricSpec *spec);
bool cli_metric_any(const CliMetricSpec *spec);
/* fp16 / int8 / fp8 defaults when META's flags record that --precision and spec has none. */
const char *cli_metric_precision_defaults(const char *meta, CliMetricSpec *spec);
/* The fp16 thresholds (rel-l2 2e-2, cosine 0.999, top1 1) into spec: a half-precision
 * output checked with no --metric, --rtol or --atol. */
void cli_metric_half_defaults(CliMetricSpec *spec);
/* The outputs META lists as computed in half precision ("half_outputs=0,2", from
 * fe_half_outputs): bit k for output k (k < 64). */
uint64_t cli_half_outputs_mask(const char *meta);
bool cli_metrics_pass(const CliMetrics *m, const CliMetricSpec *spec, char *why, size_t n);
void cli_metrics_print(FILE *f, const CliMetrics *m);

#endif
