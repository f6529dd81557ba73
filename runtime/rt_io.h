/* rt_io.h: host <-> device dtype conversions at the bundle's edge (rt_io.c). */
#ifndef SPYRT_RT_IO_H
#define SPYRT_RT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isa.h"

bool rt_io_narrow(int host, int dev, const void *src, void *dst, size_t n, size_t *bad,
                  int64_t *val);
void rt_io_widen(int host, int dev, const void *src, void *dst, size_t n);
void rt_io_format(int host, const void *src, size_t i, char *buf, size_t len);

#endif
