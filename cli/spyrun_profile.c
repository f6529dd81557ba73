/* spyrun_profile.c: the per-kernel profile table of spyrun --profile: modelled device
 * time, host time, roofline, lost time, efficiency and limiter of every kernel, sorted
 * by lost time, and the totals (the row benchmarks read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "spyrt.h"

/* Orders kernel profiles by lost time (modelled minus roofline), largest first. */
static int lost_cmp(const void *a, const void *b)
{
    const spy_kernel_profile *x = a, *y = b;
    double lx = x->device_us - x->roofline_us, ly = y->device_us - y->roofline_us;
    return lx > ly ? -1 : lx < ly;
}

/* Print the per-kernel profile table of the last run, with totals: kernels sorted by
 * the time they lose against their roofline, each with what limits it. */
void cli_print_profile(const spy_model *m, const spy_session *s)
{
    int nk = spy_model_num_kernels(m), w = 6, n = 0;
    spy_kernel_profile *ps = calloc(nk > 0 ? (size_t)nk : 1, sizeof *ps);
    if (!ps)
        return;
    for (int i = 0; i < nk; i++)
        if (spy_session_kernel_profile(s, i, &ps[n]) == SPY_OK) {
            if (ps[n].name && (int)strlen(ps[n].name) > w)
                w = (int)strlen(ps[n].name);
            n++;
        }
    qsort(ps, (size_t)n, sizeof *ps, lost_cmp);
    char total[64];
    snprintf(total, sizeof total, "total (%d kernels)", nk);
    if (w < (int)strlen(total))
        w = (int)strlen(total);
    if (w > 48)
        w = 48;
    printf("\n%-*s %12s %12s %12s %12s %6s  %s\n", w, "kernel", "device us", "host us",
           "roofline us", "lost us", "eff", "limiter");
    double dev = 0, host = 0, roof = 0;
    for (int i = 0; i < n; i++) {
        const spy_kernel_profile *p = &ps[i];
        dev += p->device_us;
        host += p->host_us;
        roof += p->roofline_us;
        printf("%-*.*s %12.3f %12.3f %12.3f %12.3f %5.1f%%  %s\n", w, w, p->name ? p->name : "?",
               p->device_us, p->host_us, p->roofline_us, p->device_us - p->roofline_us,
               p->device_us > 0 ? 100.0 * p->roofline_us / p->device_us : 0.0,
               p->limiter ? p->limiter : "?");
    }
    printf("%-*s %12.3f %12.3f %12.3f %12.3f %5.1f%%\n", w, total, dev, host, roof, dev - roof,
           dev > 0 ? 100.0 * roof / dev : 0.0);
    free(ps);
}
