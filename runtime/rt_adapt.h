/* rt_adapt.h: a session's choice of how many kernels it shares over its host threads
 * (the share policy), made from the measured wall time of its own runs (rt_adapt.c).
 *
 * At load every kernel gets a share rank from its estimated host work (rt_timing.c):
 * under policy p the kernels of rank <= p are shared over the session's threads, the
 * others run all their programs on the calling thread. Policy 0 is the default (only
 * kernels of plenty of work are shared); policies 1 and 2 also share smaller ones.
 * Whether sharing a small kernel pays depends on the host (how quickly an idle thread
 * is woken, whether another process holds the CPU the worker needs), not on the
 * bundle, so the session tries each policy its bundle can tell apart now and then and
 * keeps the fastest. Each core program still runs start to end on one thread: the
 * policy changes no result bit and no modelled time.
 */
#ifndef SPYRT_RT_ADAPT_H
#define SPYRT_RT_ADAPT_H

#include <stdint.h>

#define RT_NPOLICY 3         /* share policies; a kernel of rank RT_NPOLICY is never shared */
#define RT_TRIAL 3           /* runs of one policy per trial */
#define RT_HEAD 2            /* runs of a period before its trials */

typedef struct {
    uint32_t mask;           /* bit p: policy p is worth trying (bit 0 always) */
    uint32_t runs;           /* runs recorded */
    uint8_t best;            /* policy of the runs that are no trial */
    uint8_t ntrial[RT_NPOLICY];        /* samples of the current trial of each policy */
    double trial[RT_NPOLICY][RT_TRIAL]; /* their wall times, microseconds */
} RtAdapt;

/* Host work (rt_timing.c units) from which a kernel is shared under policy p. */
double rt_adapt_share_work(int p);
/* Share rank of a kernel of host work w: the lowest policy that shares it. */
uint8_t rt_adapt_rank(double w);
/* Starts the choice among the policies of mask (bit p: policy p), policy 0 first. */
void rt_adapt_init(RtAdapt *a, uint32_t mask);
/* Policy the next run uses. */
int rt_adapt_policy(const RtAdapt *a);
/* Records a completed run of policy p that took us microseconds. */
void rt_adapt_record(RtAdapt *a, int p, double us);

#endif
