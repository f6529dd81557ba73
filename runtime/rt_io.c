/* rt_io.c: conversions at the bundle's edge between host dtypes (what the caller
 * passes) and device dtypes (what the cores see): inputs are narrowed with a range
 * check, outputs widened. Pairs are those accepted by rt_io_pair_ok: int64/uint16/
 * uint32/uint64 <-> int32, float64 <-> float32, and the 4-/2-bit integers (one byte
 * per element on both sides) copied with a check that each byte fits the width.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtconv.h"
#include "rt_io.h"

/* Element size of the device dtypes the edge copies unchanged (one byte or more). */
static size_t rt_io_esize(int dt) {
    return dt == ISA_DT_F32 || dt == ISA_DT_I32                           ? 4
           : dt == ISA_DT_I16 || dt == ISA_DT_F16 || dt == ISA_DT_BF16 ? 2
                                                                          : 1;
}

/* Writes element i of host buffer src (dtype host) into buf as text, for the message
 * about a value rt_io_narrow refused. */
void rt_io_format(int host, const void *src, size_t i, char *buf, size_t len) {
    const uint8_t *s = src;
    if (host == 11) {
        double d;
        memcpy(&d, s + 8 * i, 8);
        snprintf(buf, len, "%.17g", d);
    } else if (host == 13) {
        uint64_t u;
        memcpy(&u, s + 8 * i, 8);
        snprintf(buf, len, "%llu", (unsigned long long)u);
    } else if (host == 7) {
        int64_t v;
        memcpy(&v, s + 8 * i, 8);
        snprintf(buf, len, "%lld", (long long)v);
    } else if (spy_dt_subbyte_int(host)) {
        snprintf(buf, len, "%d", spy_dt_unsigned_sub(host) ? s[i] : (int8_t)s[i]);
    } else if (host == 12) {
        uint32_t u;
        memcpy(&u, s + 4 * i, 4);
        snprintf(buf, len, "%u", u);
    } else {
        snprintf(buf, len, "?");
    }
}

/* Converts n host elements at src into device elements at dst. On a value the device
 * type cannot hold (an integer outside int32, a finite double beyond the float32
 * range) returns false with *bad = its index and *val = the value (integers; doubles
 * saturated: see rt_io_format). */
bool rt_io_narrow(int host, int dev, const void *src, void *dst, size_t n, size_t *bad,
                  int64_t *val) {
    const uint8_t *s = src;
    if (spy_dt_subbyte_int(host)) { /* one byte each: the value must fit the width */
        for (size_t i = 0; i < n; i++) {
            int32_t v = spy_dt_unsigned_sub(host) ? s[i] : (int8_t)s[i];
            if (spy_wrap_subbyte(v, host) != v) {
                *bad = i;
                *val = v;
                return false;
            }
        }
        memcpy(dst, src, n);
        return true;
    }
    if (dev == ISA_DT_F32 && host == 11) {
        for (size_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, s + 8 * i, 8);
            float f = (float)d;
            if (isinf(f) && !isinf(d)) {
                *bad = i;
                *val = d > 0 ? INT64_MAX : INT64_MIN;
                return false;
            }
            memcpy((uint8_t *)dst + 4 * i, &f, 4);
        }
        return true;
    }
    int32_t *d = dst;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (host == 7) {
            memcpy(&v, s + 8 * i, 8);
        } else if (host == 13) {
            uint64_t u;
            memcpy(&u, s + 8 * i, 8);
            if (u > INT32_MAX) {
                *bad = i;
                *val = u > INT64_MAX ? INT64_MAX : (int64_t)u;
                return false;
            }
            v = (int64_t)u;
        } else if (host == 12) {
            uint32_t u;
            memcpy(&u, s + 4 * i, 4);
            v = u;
        } else { /* uint16 */
            uint16_t u;
            memcpy(&u, s + 2 * i, 2);
            v = u;
        }
        if (v < INT32_MIN || v > INT32_MAX) {
            *bad = i;
            *val = v;
            return false;
        }
        d[i] = (int32_t)v;
    }
    return true;
}

/* Converts n device elements at src into host elements at dst (widening). */
void rt_io_widen(int host, int dev, const void *src, void *dst, size_t n) {
    uint8_t *d = dst;
    if (host == dev) {
        memcpy(dst, src, n * rt_io_esize(dev));
        return;
    }
    if (dev == ISA_DT_F32) { /* -> double */
        for (size_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, (const uint8_t *)src + 4 * i, 4);
            double x = f;
            memcpy(d + 8 * i, &x, 8);
        }
        return;
    }
    const int32_t *s = src;
    for (size_t i = 0; i < n; i++) {
        int64_t v = s[i];
        switch (host) {
        case 7:
        case 13: memcpy(d + 8 * i, &v, 8); break;
        case 12: {
            uint32_t u = (uint32_t)v;
            memcpy(d + 4 * i, &u, 4);
            break;
        }
        default: {
            uint16_t u = (uint16_t)v;
            memcpy(d + 2 * i, &u, 2);
            break;
        }
        }
    }
}
