/* spyrun_load.c: loading the bundle for spyrun, timed, and the load figures that
 * --profile prints for benchmarks: one stable line
 *
 *   load_ms=12.345 rss_mib=630.2 bundle_mib=622.4
 *
 * (wall time of spy_model_load_file, the process's resident memory right after it,
 * the bundle file's size), and after the first inference `first_run_ms=...`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"

/* Resident memory of this process in MiB: VmRSS of /proc/self/status, else the
 * peak from getrusage (where /proc is missing). */
static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    if (kib < 0) {
        struct rusage ru;
        kib = getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
    }
    return (double)kib / 1024.0;
}

/* Milliseconds on the monotonic clock. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* spy_model_load_file(path); with stats, prints the load line on success. */
spy_status cli_load_model(const char *path, bool stats, spy_model **m, char *err, size_t errlen)
{
    double t0 = now_ms();
    spy_status st = spy_model_load_file(path, m, err, errlen);
    double ms = now_ms() - t0;
    struct stat sb;
    if (st == SPY_OK && stats)
        printf("load_ms=%.3f rss_mib=%.1f bundle_mib=%.1f\n", ms, rss_mib(),
               stat(path, &sb) ? 0.0 : (double)sb.st_size / (1024.0 * 1024.0));
    return st;
}
