/* rt_exec.c: the instruction interpreter: runs one verified core program in order,
 * dispatching each instruction to its tile kernel. Stops at the first run-time data
 * error and records which instruction failed.
 */
#include "rt_exec.h"

/* Runs code[0..n) on core c; returns RT_XOK or the first error (c->err_*). */
int rt_exec_program(RtCore *c, const SpyInsn *code, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const SpyInsn *in = &code[i];
        int rc = RT_XOK;
        switch (in->opcode) {
        case ISA_LOAD: rt_dma(c, &in->dma, false); break;
        case ISA_STORE: rt_dma(c, &in->dma, true); break;
        case ISA_GATHER: rc = rt_gather(c, &in->gather); break;
        case ISA_SCATTER: rt_scatter(c, &in->scatter); break;
        case ISA_MATMUL: rt_matmul(c, &in->mm); break;
        case ISA_VEC: rc = rt_vec(c, &in->vec); break;
        case ISA_VREDUCE: rt_vreduce(c, &in->red); break;
        case ISA_VFILL: rt_vfill(c, &in->fill); break;
        case ISA_VSCAN: rt_vscan(c, &in->scan); break;
        default: break; /* NOP, BARRIER */
        }
        if (rc != RT_XOK) {
            c->err = rc;
            c->err_insn = i;
            return rc;
        }
    }
    return RT_XOK;
}
