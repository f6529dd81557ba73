/* rt_adapt.c: the session's share policy (rt_adapt.h), chosen by measurement.
 *
 * The runs of a session come in periods of RT_PERIOD_RUNS runs per policy worth trying.
 * A period's first RT_HEAD runs use the best policy known (the first runs of a session
 * are still warming caches); then each such policy runs a trial of RT_TRIAL
 * consecutive runs (consecutive, so that a policy that shares finds the worker awake
 * as it would in its steady state); the policy with the lowest median trial time
 * becomes the best one for the rest of the period, a policy sharing more kernels only
 * when it is faster by RT_MARGIN (a tie keeps the calling thread's caches and leaves
 * the other CPUs to the host). Trials repeat every period because the host's load
 * changes. A bundle whose policies all share the same kernels (or a session of one
 * thread) has one policy and measures nothing.
 */
#include "rt_adapt.h"

#define RT_PERIOD_RUNS 32    /* runs of a period per policy tried (the trials of the
                                policies that are not the best: under 10% of runs) */
#define RT_MARGIN 0.03       /* a policy sharing more must be this much faster */

/* Host work from which policy p shares a kernel, in the units of rt_timing.c's
 * estimate (about one per element moved or computed, or per 16 multiply-adds; one
 * thread runs some 3000-6000 a microsecond): 65536 units (10-20 us) pay for the
 * synchronisation even when the other threads are slow to come, as on a busy host;
 * on a quiet host with a worker awake sharing pays down to a few microseconds. */
static const double rt_share_work[RT_NPOLICY] = {65536.0, 16384.0, 4096.0};

/* Host work (rt_timing.c units) from which a kernel is shared under policy p. */
double rt_adapt_share_work(int p) {
    return rt_share_work[p];
}

/* Share rank of a kernel of host work w: the lowest policy that shares it. */
uint8_t rt_adapt_rank(double w) {
    uint8_t p = 0;
    while (p < RT_NPOLICY && w < rt_share_work[p])
        p++;
    return p;
}

/* Policies worth trying. */
static int npolicies(const RtAdapt *a) {
    return __builtin_popcount(a->mask);
}

/* The j-th policy of the mask (j < npolicies). */
static int nth_policy(const RtAdapt *a, int j) {
    for (int p = 0; p < RT_NPOLICY; p++)
        if ((a->mask >> p & 1) && j-- == 0)
            return p;
    return 0;
}

/* Starts the choice among the policies of mask (bit p: policy p), policy 0 first. */
void rt_adapt_init(RtAdapt *a, uint32_t mask) {
    *a = (RtAdapt){.mask = (mask & ((1u << RT_NPOLICY) - 1)) | 1u};
}

/* Trial policy of the run after a->runs runs, -1 when that run is no trial. */
static int trial_policy(const RtAdapt *a) {
    int n = npolicies(a);
    if (n < 2)
        return -1;
    uint32_t slot = a->runs % (uint32_t)(RT_PERIOD_RUNS * n);
    if (slot < RT_HEAD || slot >= (uint32_t)(RT_HEAD + RT_TRIAL * n))
        return -1;
    return nth_policy(a, (int)(slot - RT_HEAD) / RT_TRIAL);
}

/* Policy the next run uses. */
int rt_adapt_policy(const RtAdapt *a) {
    int p = trial_policy(a);
    return p >= 0 ? p : a->best;
}

_Static_assert(RT_TRIAL == 3, "median3 takes the median of a trial");

/* Median of the RT_TRIAL times t. */
static double median3(const double *t) {
    double a = t[0], b = t[1], c = t[2];
    if (a > b) {
        double x = a;
        a = b;
        b = x;
    }
    return c < a ? a : c > b ? b : c;
}

/* Picks the best policy from the complete trials of the period (policies in
 * increasing order of sharing), then clears them. */
static void pick_best(RtAdapt *a) {
    double best = -1;
    for (int p = 0; p < RT_NPOLICY; p++) {
        if (a->ntrial[p] == RT_TRIAL) {
            double m = median3(a->trial[p]);
            if (best < 0 || m < best * (1 - RT_MARGIN)) {
                best = m;
                a->best = (uint8_t)p;
            }
        }
        a->ntrial[p] = 0;
    }
}

/* Records a completed run of policy p that took us microseconds. */
void rt_adapt_record(RtAdapt *a, int p, double us) {
    int tp = trial_policy(a);
    if (tp >= 0 && tp == p && a->ntrial[p] < RT_TRIAL)
        a->trial[p][a->ntrial[p]++] = us;
    a->runs++;
    uint32_t n = (uint32_t)npolicies(a);
    if (n > 1 && a->runs % (RT_PERIOD_RUNS * n) == RT_HEAD + RT_TRIAL * n)
        pick_best(a);
}
