/* rt_io.c: conversions at the bundle's edge between host dtypes (what the caller
 * passes) and device dtypes (what the cores see): inputs are narrowed with a range
 * check, outputs widened. Pairs are those accepted by rt_io_pair_ok.
 */
#include <string.h>

#include "rt_io.h"

/* Converts n host elements at src into device elements at dst. On a value the device
 * type cannot hold returns false with *bad = its index and *val = the value. */
bool rt_io_narrow(int host, int dev, const void *src, void *dst, size_t n, size_t *bad,
                  int64_t *val) {
    const uint8_t *s = src;
    if (dev == ISA_DT_F32 && host == 11) {
        for (size_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, s + 8 * i, 8);
            float f = (float)d;
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
