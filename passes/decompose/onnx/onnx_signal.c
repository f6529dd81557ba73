/* onnx_signal.c: DFT, STFT, HannWindow / HammingWindow / BlackmanWindow and
 * MelWeightMatrix.
 *
 * A DFT is one MATMUL: the signal axis moves innermost with the real and imaginary
 * parts side by side ([rows, cin * m]) and multiplies a [cin * m, cout * K] matrix of
 * cosines and sines built at compile time (forward, inverse, one-sided and the
 * Hermitian inverse irfft, with truncation or zero padding to dft_length). STFT
 * GATHERs the frames (start = frame * step, a runtime step is fine), applies the
 * window and does the same MATMUL; with a runtime frame length the matrix is
 * computed on the device from iotas. Windows are constants. MelWeightMatrix is a
 * constant when its inputs are, else computed pointwise from the runtime scalars.
 * Output sizes that depend on runtime scalars come from the declared output type.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

#define TWO_PI 6.283185307179586

typedef enum { DFT_FWD, DFT_INV, DFT_IRFFT } DftKind;

/* DFT matrix [cin*m, cout*K] (rows: real part of t = 0..m-1, then imaginary; columns:
 * real part of bin k = 0..K-1, then imaginary) for transform length n. */
static ValId dft_matrix(DecCtx *c, DftKind kind, int64_t m, int64_t n, int64_t K, int cin, int cout)
{
    int64_t rows = cin * m, cols = cout * K, dims[2] = {rows, cols};
    double *w = ir_scratch(c->g, sizeof(double) * (size_t)(rows * cols + 1));
    int64_t tmax = kind == DFT_IRFFT ? (m < n / 2 + 1 ? m : n / 2 + 1) : (m < n ? m : n);
    for (int64_t t = 0; t < tmax; t++)
        for (int64_t k = 0; k < K; k++) {
            double th = TWO_PI * (double)((t * k) % n) / (double)n, cs = cos(th), sn = sin(th);
            double *re = w + t * cols, *im = cin == 2 ? w + (m + t) * cols : NULL;
            if (kind == DFT_FWD) { /* e^{-i th} */
                re[k] = cs;
                re[K + k] = -sn;
                if (im) {
                    im[k] = sn;
                    im[K + k] = cs;
                }
            } else if (kind == DFT_INV) { /* e^{+i th} / n */
                re[k] = cs / (double)n;
                re[K + k] = sn / (double)n;
                if (im) {
                    im[k] = -sn / (double)n;
                    im[K + k] = cs / (double)n;
                }
            } else { /* real output: Hermitian weights 1 (DC, Nyquist) or 2 */
                double h = (t == 0 || 2 * t == n) ? 1.0 : 2.0;
                re[k] = h * cs / (double)n;
                if (im)
                    im[k] = -h * sn / (double)n;
            }
        }
    return dec_const(c->g, IR_DT_F32, dims, 2, w);
}

/* DFT of x along axis (not the last, complex, axis) with length n. */
static ValId dft_axis(DecCtx *c, ValId x, int axis, int64_t n, DftKind kind, bool onesided)
{
    IrType tx = *dec_ty(c, x);
    int r = tx.rank, cin = (int)tx.dims[r - 1], cout = kind == DFT_IRFFT ? 1 : 2;
    int64_t m = tx.dims[axis], K = kind == DFT_IRFFT ? n : onesided ? n / 2 + 1 : n;
    int64_t perm[IR_MAX_RANK], tdims[IR_MAX_RANK], rows = 1, back[IR_MAX_RANK];
    int j = 0;
    for (int i = 0; i < r - 1; i++)
        if (i != axis) {
            back[i] = j;
            tdims[j] = tx.dims[i];
            rows *= tx.dims[i];
            perm[j++] = i;
        }
    perm[j] = r - 1;
    perm[j + 1] = axis;
    back[axis] = r - 1;
    back[r - 1] = r - 2;
    int64_t x2[2] = {rows, cin * m};
    if ((double)(cin * m) * (double)(cout * K) > (double)DIX_ONEHOT_MAX) {
        dec_err(c, "unsupported: DFT of length %lld over %lld points needs a %lld x %lld matrix "
                "(too large)", (long long)n, (long long)m, (long long)(cin * m), (long long)(cout * K));
        return IR_NONE;
    }
    ValId xt = dec_reshape(c, dec_transpose(c, dec_cast(c, x, IR_DT_F32), perm), x2, 2);
    ValId y = ir_matmul(c->g, xt, dft_matrix(c, kind, m, n, K, cin, cout), c->o);
    tdims[r - 2] = cout;
    tdims[r - 1] = K;
    y = dec_reshape(c, y, tdims, r);
    return dec_cast(c, dec_transpose(c, y, back), tx.dtype);
}

/* Output type of dft_axis without building it. */
static void dft_type(const IrType *tx, int axis, int64_t n, DftKind kind, bool onesided, IrType *t)
{
    *t = *tx;
    t->dims[axis] = kind == DFT_IRFFT ? n : onesided ? n / 2 + 1 : n;
    t->dims[t->rank - 1] = kind == DFT_IRFFT ? 1 : 2;
}

/* Transform length: the dft_length input (a compile-time constant) or the default. */
static bool dft_length(DecCtx *c, const IrType *tx, int axis, DftKind kind, bool onesided,
                       bool quiet, int64_t *n)
{
    ValId dl = dec_in(c, 1);
    *n = kind == DFT_IRFFT ? 2 * (tx->dims[axis] - 1) : tx->dims[axis];
    if (dl != IR_NONE && !dix_const_int(c, 1, n)) {
        /* the length decides the output shape: it must be known when compiling */
        dec_dynamic_err(c, dl, "dft_length");
        return false;
    }
    if (*n < 1 && !quiet)
        dec_err(c, "dft_length %lld must be positive", (long long)*n);
    return *n >= 1;
}

/* DFT (opset 17..): axis attribute (< 20) or axis input (>= 20, may be runtime). */
bool dec_dft(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrType tx = *dec_ty(c, x);
    int r = tx.rank;
    bool inverse = dec_ai(c, "inverse", 0) != 0, onesided = dec_ai(c, "onesided", 0) != 0;
    DftKind kind = inverse ? (onesided ? DFT_IRFFT : DFT_INV) : DFT_FWD;
    if (r < 2 || (tx.dims[r - 1] != 1 && tx.dims[r - 1] != 2) || !ir_dtype_is_float(tx.dtype)) {
        dec_err(c, "input must be a float [..., signal, 1 or 2] tensor");
        return false;
    }
    if (onesided && tx.dims[r - 1] == 2 && !inverse) {
        dec_err(c, "onesided output needs a real input");
        return false;
    }
    int64_t a = c->opset >= 20 ? -2 : dec_ai(c, "axis", 1);
    bool runtime_axis = c->opset >= 20 && dec_in(c, 2) != IR_NONE && !dix_const_int(c, 2, &a);
    if (!runtime_axis) {
        int64_t n;
        if (a < -r || a >= r - 1 || (a < 0 && a + r == r - 1)) {
            dec_err(c, "axis %lld is out of range (the last axis holds the complex parts)", (long long)a);
            return false;
        }
        int axis = (int)(a < 0 ? a + r : a);
        if (!dft_length(c, &tx, axis, kind, onesided, false, &n))
            return false;
        c->out[0] = dft_axis(c, x, axis, n, kind, onesided);
        return c->out[0] != IR_NONE;
    }
    /* runtime axis: every axis whose result has the declared (or common) shape */
    const IrType *decl = dix_declared(c, 0);
    ValId av = dix_scalar(c, dec_in(c, 2), "axis", IR_DT_I64), y = IR_NONE;
    IrType first = {0};
    for (int i = r - 2; i >= 0 && av != IR_NONE; i--) {
        int64_t n;
        IrType t;
        if (!dft_length(c, &tx, i, kind, onesided, true, &n)) {
            if (ir_failed(c->g))
                return false;
            continue; /* no valid length on this axis: not a candidate */
        }
        dft_type(&tx, i, n, kind, onesided, &t);
        if (decl ? !ir_type_eq(decl, &t) : (y != IR_NONE && !ir_type_eq(&first, &t)))
            continue;
        ValId yi = dft_axis(c, x, i, n, kind, onesided);
        if (yi == IR_NONE)
            return false;
        ValId hit = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_EQ, av, i),
                            dec_bin_s(c, IR_BIN_EQ, av, i - r));
        y = y == IR_NONE ? yi : dec_select(c, hit, yi, y);
        first = t;
    }
    if (y == IR_NONE) {
        if (av != IR_NONE)
            dec_err(c, "unsupported: dynamic axis input (no axis gives the declared shape)");
        return false;
    }
    c->out[0] = y;
    return true;
}

/* Forward DFT matrix [cin*T, 2K] from cosines and sines [T, K] (any values). */
static ValId fwd_matrix(DecCtx *c, ValId cs, ValId sn, int cin)
{
    ValId nsn = dec_un(c, IR_UN_NEG, sn);
    ValId re[2] = {cs, nsn}, im[2] = {sn, cs};
    ValId rows[2] = {dec_concat(c, re, 2, 1), dec_concat(c, im, 2, 1)};
    return cin == 2 ? dec_concat(c, rows, 2, 0) : rows[0];
}

/* Sizes of STFT: frame length (static, or runtime value flv with T its upper
 * bound), frames F and bins K. */
typedef struct {
    int64_t T, F, K, fl;      /* fl: static frame length, -1 when runtime */
    ValId flv;                /* runtime frame length (i64 scalar) or IR_NONE */
} StftSizes;

/* Work out STFT's sizes from constants or the declared output [B, F, K, 2]. */
static bool stft_sizes(DecCtx *c, const IrType *ts, bool onesided, StftSizes *z)
{
    const IrType *decl = dix_declared(c, 0);
    ValId win = dec_in(c, 2), flin = dec_in(c, 3);
    int64_t L = ts->dims[1], step = 0;
    z->flv = IR_NONE;
    z->fl = win != IR_NONE ? dec_numel(dec_ty(c, win)) : flin == IR_NONE ? L : -1;
    if (z->fl < 0 && !dix_const_int(c, 3, &z->fl)) {
        if (!decl || decl->rank != 4) {
            dec_err(c, "unsupported: dynamic frame_length input (and no declared output shape)");
            return false;
        }
        z->fl = -1;
        z->flv = dix_scalar(c, flin, "frame_length", IR_DT_I64);
        z->T = onesided ? 2 * decl->dims[2] - 1 : decl->dims[2];
        if (z->T > L)
            z->T = L;
    } else {
        z->T = z->fl;
    }
    bool step_known = dix_const_int(c, 1, &step);
    if (z->fl >= 1 && z->fl <= L && step_known && step >= 1) {
        z->F = 1 + (L - z->fl) / step;
        z->K = onesided ? z->fl / 2 + 1 : z->fl;
    } else if (decl && decl->rank == 4 && z->T >= 1 && z->T <= L) {
        z->F = decl->dims[1];
        z->K = decl->dims[2];
    } else {
        dec_err(c, "unsupported: dynamic frame_step or frame_length input (and no declared "
                "output shape), or a frame longer than the signal");
        return false;
    }
    return z->F >= 1 && z->K >= 1;
}

/* Runtime-length DFT matrix: cos/sin of 2 pi ((t k) mod fl) / fl, rows t >= fl zero. */
static void runtime_trig(DecCtx *c, const StftSizes *z, ValId *cs, ValId *sn)
{
    int64_t dims[2] = {z->T, z->K};
    double *tk = ir_scratch(c->g, sizeof(double) * (size_t)(z->T * z->K + 1));
    for (int64_t t = 0; t < z->T; t++)
        for (int64_t k = 0; k < z->K; k++)
            tk[t * z->K + k] = (double)(t * k);
    ValId prod = dec_const(c->g, IR_DT_I64, dims, 2, tk);
    ValId th = dec_cast(c, dec_bin(c, IR_BIN_MOD, prod, z->flv), IR_DT_F32);
    ValId flf = dec_cast(c, z->flv, IR_DT_F32);
    th = dec_bin(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_MUL, th, TWO_PI), flf);
    *cs = dec_un(c, IR_UN_COS, th);
    *sn = dec_un(c, IR_UN_SIN, th);
}

/* STFT(signal, frame_step, window?, frame_length?) -> [B, frames, bins, 2]. */
bool dec_stft(DecCtx *c)
{
    ValId sig = dec_in(c, 0), stepv = dec_in(c, 1), win = dec_in(c, 2);
    if (sig == IR_NONE || stepv == IR_NONE) {
        dec_err(c, "missing signal or frame_step input");
        return false;
    }
    IrType ts = *dec_ty(c, sig);
    bool onesided = dec_ai(c, "onesided", 1) != 0;
    StftSizes z;
    if (ts.rank != 3 || (ts.dims[2] != 1 && ts.dims[2] != 2) || !ir_dtype_is_float(ts.dtype)) {
        dec_err(c, "signal must be a float [batch, length, 1 or 2] tensor");
        return false;
    }
    if (!stft_sizes(c, &ts, onesided, &z))
        return false;
    int64_t B = ts.dims[0], L = ts.dims[1], cin = ts.dims[2], T = z.T, F = z.F, K = z.K;
    if ((double)(cin * T) * (double)(2 * K) > (double)DIX_ONEHOT_MAX ||
        (double)F * (double)T > (double)DIX_ONEHOT_MAX) {
        dec_err(c, "unsupported: STFT of %lld frames of %lld samples is too large", (long long)F,
                (long long)T);
        return false;
    }
    /* frames: idx[f, t] = min(f * step + t, L - 1) */
    ValId step = dix_scalar(c, stepv, "frame_step", IR_DT_I64);
    if (step == IR_NONE)
        return false;
    ValId idx = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, dix_iota(c, IR_DT_I64, F, 2, 0), step),
                        dix_iota(c, IR_DT_I64, T, 2, 1));
    idx = dec_bin_s(c, IR_BIN_MIN, idx, (double)(L - 1));
    ValId fr = dec_gather(c, dec_cast(c, sig, IR_DT_F32), idx, 1); /* [B, F, T, cin] */
    ValId w = win != IR_NONE ? dec_cast(c, win, IR_DT_F32) : IR_NONE;
    if (z.flv != IR_NONE) {
        ValId keep = dec_bin(c, IR_BIN_LT, dix_iota(c, IR_DT_I64, T, 1, 0), z.flv);
        w = dec_cast(c, keep, IR_DT_F32);
    }
    if (w != IR_NONE) {
        int64_t wd[2] = {T, 1};
        fr = dec_bin(c, IR_BIN_MUL, fr, dec_reshape(c, w, wd, 2));
    }
    ValId W;
    if (z.flv == IR_NONE) {
        W = dft_matrix(c, DFT_FWD, T, z.fl, K, (int)cin, 2);
    } else {
        ValId cs, sn;
        runtime_trig(c, &z, &cs, &sn);
        W = fwd_matrix(c, cs, sn, (int)cin);
    }
    int64_t perm[4] = {0, 1, 3, 2}, x2[2] = {B * F, cin * T}, y4[4] = {B, F, 2, K};
    ValId xt = dec_reshape(c, dec_transpose(c, fr, perm), x2, 2);
    ValId y = dec_reshape(c, ir_matmul(c->g, xt, W, c->o), y4, 4);
    c->out[0] = dec_cast(c, dec_transpose(c, y, perm), ts.dtype);
    return true;
}

/* HannWindow, HammingWindow, BlackmanWindow: a constant of the requested length; a
 * runtime size input is computed on the device up to the declared output length
 * (onnx_runshape.c). */
bool dec_window(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    int64_t size;
    IrDType odt = (IrDType)dec_ai(c, "output_datatype", IR_DT_F32);
    int kind = strcmp(op, "HannWindow") == 0 ? 0 : strcmp(op, "HammingWindow") == 0 ? 1 : 2;
    if (!dix_const_int(c, 0, &size) && dec_in(c, 0) != IR_NONE &&
        ir_dtype_size(odt) != 0 && dec_rt_window(c, odt, kind))
        return true;
    if (!dix_const_int(c, 0, &size)) {
        if (ir_failed(c->g))
            return false;
        if (dec_in(c, 0) == IR_NONE)
            dec_err(c, "%s needs its size input", op);
        else
            dec_dynamic_err(c, dec_in(c, 0), "size");  /* it decides the output shape */
        return false;
    }
    IrDType dt = (IrDType)dec_ai(c, "output_datatype", IR_DT_F32);
    if (size < 0 || !dec_fits(c, size, sizeof(double), "window") || ir_dtype_size(dt) == 0) {
        dec_err(c, "bad window size %lld or output_datatype", (long long)size);
        return false;
    }
    double N = dec_ai(c, "periodic", 1) ? (double)size : (double)size - 1;
    double *v = ir_scratch(c->g, sizeof(double) * (size_t)(size + 1));
    for (int64_t i = 0; i < size; i++) {
        double a = TWO_PI * (double)i / N;
        if (strcmp(op, "HannWindow") == 0)
            v[i] = 0.5 - 0.5 * cos(a);
        else if (strcmp(op, "HammingWindow") == 0)
            v[i] = 25.0 / 46.0 - (21.0 / 46.0) * cos(a);
        else
            v[i] = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
    }
    c->out[0] = dec_const(c->g, dt, &size, 1, v);
    return true;
}

/* Mel filter bank edges (in DFT bins) for M filters, as the reference computes
 * them in double precision. */
static void mel_bins_host(int64_t M, double dl, double sr, double lo, double hi, int64_t *fb)
{
    double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
    double step = (hmel - lmel) / (double)(M + 2);
    for (int64_t i = 0; i < M + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lmel) / 2595.0) - 1.0);
        fb[i] = (int64_t)floor((dl + 1.0) * hz / sr);
    }
}

/* Weight of spectrogram bin j in the triangular filter (l, ce, h). */
static double mel_weight(int64_t j, int64_t l, int64_t ce, int64_t h)
{
    double v = 0;
    if (ce == l)
        v = j == ce;
    else if (j >= l && j <= ce)
        v = (double)(j - l) / (double)(ce - l);
    if (h > ce && j >= ce && j < h)
        v = (double)(h - j) / (double)(h - ce);
    return v;
}

/* The filter edges computed on the device from runtime scalars: i64 [1, M+2]. */
static ValId mel_bins_dev(DecCtx *c, int64_t M)
{
    ValId dl = dix_scalar(c, dec_in(c, 1), "dft_length", IR_DT_F32);
    ValId sr = dix_scalar(c, dec_in(c, 2), "sample_rate", IR_DT_F32);
    ValId lo = dix_scalar(c, dec_in(c, 3), "lower_edge_hertz", IR_DT_F32);
    ValId hi = dix_scalar(c, dec_in(c, 4), "upper_edge_hertz", IR_DT_F32);
    if (dl == IR_NONE || sr == IR_NONE || lo == IR_NONE || hi == IR_NONE)
        return IR_NONE;
    const double k = 2595.0 / log(10.0);
    ValId lmel = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_LOG, dec_bin_s(c, IR_BIN_ADD,
                           dec_bin_s(c, IR_BIN_MUL, lo, 1.0 / 700.0), 1.0)), k);
    ValId hmel = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_LOG, dec_bin_s(c, IR_BIN_ADD,
                           dec_bin_s(c, IR_BIN_MUL, hi, 1.0 / 700.0), 1.0)), k);
    ValId step = dec_bin_s(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, hmel, lmel), (double)(M + 2));
    ValId mel = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL,
                        dix_iota(c, IR_DT_F32, M + 2, 2, 1), step), lmel);
    ValId hz = dec_bin_s(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_SUB,
                         dec_un(c, IR_UN_EXP, dec_bin_s(c, IR_BIN_MUL, mel, 1.0 / k)), 1.0), 700.0);
    ValId q = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_ADD, dl, 1.0), hz), sr);
    return dec_un(c, IR_UN_FLOOR, q);
}

/* MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz) -> [dft_length / 2 + 1, num_mel_bins]. */
bool dec_mel_weight_matrix(DecCtx *c)
{
    int64_t M, dl, S;
    bool cm = dix_const_int(c, 0, &M), cd = dix_const_int(c, 1, &dl);
    if (!cm || !cd) {                      /* both decide the output shape */
        dec_dynamic_err(c, dec_in(c, cm ? 1 : 0), cm ? "dft_length" : "num_mel_bins");
        return false;
    }
    S = dl / 2 + 1;
    IrDType dt = (IrDType)dec_ai(c, "output_datatype", IR_DT_F32);
    if (M < 1 || S < 1 || M > DIX_ONEHOT_MAX || S > DIX_ONEHOT_MAX || ir_dtype_size(dt) == 0 ||
        !dec_fits(c, M * S, sizeof(double), "mel matrix")) {
        dec_err(c, "bad num_mel_bins %lld, dft_length or output_datatype", (long long)M);
        return false;
    }
    int64_t dims[2] = {S, M};
    double sr, lo, hi;
    bool all = cd && ir_is_const(c->g, dec_in(c, 2)) && ir_is_const(c->g, dec_in(c, 3)) &&
               ir_is_const(c->g, dec_in(c, 4));
    if (all && dec_const_scalar(c, dec_in(c, 2), "sample_rate", &sr) &&
        dec_const_scalar(c, dec_in(c, 3), "lower_edge_hertz", &lo) &&
        dec_const_scalar(c, dec_in(c, 4), "upper_edge_hertz", &hi)) {
        int64_t *fb = ir_scratch(c->g, sizeof(int64_t) * (size_t)(M + 2));
        double *v = ir_scratch(c->g, sizeof(double) * (size_t)(M * S));
        mel_bins_host(M, (double)dl, sr, lo, hi, fb);
        for (int64_t j = 0; j < S; j++)
            for (int64_t i = 0; i < M; i++)
                v[j * M + i] = mel_weight(j, fb[i], fb[i + 1], fb[i + 2]);
        c->out[0] = dec_const(c->g, dt, dims, 2, v);
        return true;
    }
    ValId fb = mel_bins_dev(c, M);
    if (fb == IR_NONE)
        return false;
    ValId l = dec_slice_axis(c, fb, 1, 0, 1, M), ce = dec_slice_axis(c, fb, 1, 1, 1, M);
    ValId h = dec_slice_axis(c, fb, 1, 2, 1, M), j = dix_iota(c, IR_DT_F32, S, 2, 0);
    ValId l2c = dec_bin(c, IR_BIN_SUB, ce, l), c2h = dec_bin(c, IR_BIN_SUB, h, ce);
    ValId up = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, j, l), dec_bin_s(c, IR_BIN_MAX, l2c, 1.0));
    ValId in_up = dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_GE, j, l), dec_bin(c, IR_BIN_LE, j, ce));
    ValId zero = dec_scalar(c->g, IR_DT_F32, 0.0), one = dec_scalar(c->g, IR_DT_F32, 1.0);
    ValId v1 = dec_select(c, dec_bin_s(c, IR_BIN_EQ, l2c, 0.0),
                          dec_select(c, dec_bin(c, IR_BIN_EQ, j, ce), one, zero),
                          dec_select(c, in_up, up, zero));
    ValId down = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, h, j), dec_bin_s(c, IR_BIN_MAX, c2h, 1.0));
    ValId in_dn = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GT, c2h, 0.0),
                          dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_GE, j, ce), dec_bin(c, IR_BIN_LT, j, h)));
    c->out[0] = dec_cast(c, dec_select(c, in_dn, down, v1), dt);
    return true;
}
