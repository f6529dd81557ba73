/* cg_out.c: the file a bundle is streamed into (cg_bundle.c), written front to back
 * through two page-aligned staging buffers.
 *
 * Why staging buffers and direct I/O: a large bundle is mostly constants, converted
 * once and written once. Through the page cache each written byte costs a freshly
 * allocated cache page (and, on a virtual machine, the host backing it), then its
 * writeback, then the freeing of those pages when the next compile replaces the file;
 * that system time is several times the time the disk needs. When the caller does not
 * read the bundle back (CgOut.direct), full staging buffers go to the disk with direct
 * I/O (O_DIRECT): from the buffer, reused, to the device, with no page-cache copy. A
 * file system that refuses direct I/O (EINVAL) is written the usual way, with
 * writeback started every WRITEBACK_STEP bytes so that dirty pages do not pile up (and
 * an fsync, spyrec --fsync, has little left to wait for). The last partial block and
 * the header patch at offset 0 are always written the usual way (direct I/O needs whole
 * blocks); the kernel keeps the two kinds of write coherent. A thread writes a full
 * buffer while the caller converts constants into the other, so that the disk and the
 * processor work at the same time (without the thread, the caller writes them itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg_internal.h"

/* Bytes of a staging buffer: a multiple of every common logical block size, large
 * enough that one write per buffer keeps the disk busy. */
#define STAGE_BYTES ((size_t)4 << 20)

/* Alignment of the buffers, and of direct writes' offsets and lengths. */
#define STAGE_ALIGN ((size_t)4096)

/* Buffered bytes handed to the disk as they are written (sync_file_range). */
#define WRITEBACK_STEP ((uint64_t)64 << 20)

/* Turn direct I/O off for the rest of the file; false when it stays on. */
static bool direct_off(CgSink *s)
{
    int fl = fcntl(s->out->fd, F_GETFL);
    if (fl < 0 || fcntl(s->out->fd, F_SETFL, fl & ~O_DIRECT) != 0)
        return false;
    s->direct = false;
    return true;
}

/* Write n bytes of p at file offset off. False when they did not all go: out->err is
 * set, or, when refused is given and the file system refuses direct I/O (EINVAL), only
 * *refused. */
static bool write_at(CgSink *s, const uint8_t *p, size_t n, uint64_t off, bool *refused)
{
    while (n > 0 && !s->out->err) {
        ssize_t r = pwrite(s->out->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EINVAL && refused) {
            *refused = true;
            return false;
        }
        if (r <= 0)
            s->out->err = r < 0 ? errno : EIO;
        else
            p += r, n -= (size_t)r, off += (uint64_t)r;
    }
    return n == 0;
}

/* Write n bytes of p at file offset off: with direct I/O while it is on (n is then a
 * whole number of blocks), else buffered, with writeback started every WRITEBACK_STEP
 * bytes. A file system that refuses direct I/O turns it off. */
static void write_span(CgSink *s, const uint8_t *p, size_t n, uint64_t off)
{
    bool refused = false;
    if (s->direct && (write_at(s, p, n, off, &refused) || !refused))
        return;
    if (refused && !direct_off(s)) {
        s->out->err = errno ? errno : EIO;
        return;
    }
    write_at(s, p, n, off, NULL);
    if (off + n - s->synced >= WRITEBACK_STEP) {   /* a hint: errors show in write */
        sync_file_range(s->out->fd, (off_t)s->synced, (off_t)(off + n - s->synced),
                        SYNC_FILE_RANGE_WRITE);
        s->synced = off + n;
    }
}

/* The writer thread: writes each buffer handed to it (hand_off) until told to quit. */
static void *writer_main(void *arg)
{
    CgSink *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->busy && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->busy)
            break;
        pthread_mutex_unlock(&s->mu);
        write_span(s, s->job, s->job_len, s->job_off);
        pthread_mutex_lock(&s->mu);
        s->busy = false;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Wait until the writer thread has written what it was handed. */
static void wait_idle(CgSink *s)
{
    if (!s->threaded)
        return;
    pthread_mutex_lock(&s->mu);
    while (s->busy)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* Write n bytes of p at off: handed to the writer thread (idle), else written here. */
static void hand_off(CgSink *s, const uint8_t *p, size_t n, uint64_t off)
{
    if (!s->threaded) {
        write_span(s, p, n, off);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->job = p;
    s->job_len = n;
    s->job_off = off;
    s->busy = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Stop the writer thread once it is idle. */
static void stop_writer(CgSink *s)
{
    if (!s->threaded)
        return;
    wait_idle(s);
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    s->threaded = false;
}

bool cg_sink_open(CgSink *s, CgOut *o)
{
    memset(s, 0, sizeof *s);
    s->out = o;
    for (int i = 0; i < 2; i++) {
        void *p = NULL;
        if (posix_memalign(&p, STAGE_ALIGN, STAGE_BYTES) != 0) {
            cg_sink_free(s);
            return false;
        }
        s->buf[i] = p;
    }
    int fl = o->direct ? fcntl(o->fd, F_GETFL) : -1;
    s->direct = fl >= 0 && fcntl(o->fd, F_SETFL, fl | O_DIRECT) == 0;
    if (pthread_mutex_init(&s->mu, NULL) == 0) {
        if (pthread_cond_init(&s->cv, NULL) == 0) {
            s->threaded = pthread_create(&s->thread, NULL, writer_main, s) == 0;
            if (!s->threaded)
                pthread_cond_destroy(&s->cv);
        }
        if (!s->threaded)
            pthread_mutex_destroy(&s->mu);
    }
    return true;
}

/* Hand the whole blocks of the current buffer (all of it when not direct) to the
 * writer and go on in the other buffer, the rest of the bytes moved to its start. */
static void flush(CgSink *s)
{
    wait_idle(s);                          /* the other buffer is free; direct is settled */
    size_t whole = s->direct ? s->n / STAGE_ALIGN * STAGE_ALIGN : s->n;
    uint8_t *full = s->buf[s->cur], *next = s->buf[s->cur ^ 1];
    memcpy(next, full + whole, s->n - whole);
    hand_off(s, full, whole, s->pos);
    s->pos += whole;
    s->n -= whole;
    s->cur ^= 1;
}

uint8_t *cg_sink_room(CgSink *s, size_t min, size_t *room)
{
    if (STAGE_BYTES - s->n < min)
        flush(s);
    *room = STAGE_BYTES - s->n;
    return s->buf[s->cur] + s->n;
}

void cg_sink_commit(CgSink *s, size_t n)
{
    s->n += n;
}

void cg_sink_put(CgSink *s, const void *d, size_t n)
{
    while (n > 0) {
        size_t room;
        uint8_t *p = cg_sink_room(s, 1, &room);
        size_t k = n < room ? n : room;
        if (d) {
            memcpy(p, d, k);
            d = (const uint8_t *)d + k;
        } else {
            memset(p, 0, k);
        }
        s->n += k;
        n -= k;
    }
}

void cg_sink_finish(CgSink *s, const void *head, size_t hlen)
{
    stop_writer(s);
    const uint8_t *p = s->buf[s->cur];
    size_t whole = s->direct ? s->n / STAGE_ALIGN * STAGE_ALIGN : s->n;
    write_span(s, p, whole, s->pos);       /* direct I/O ends here: */
    if (s->direct && !direct_off(s) && !s->out->err)
        s->out->err = errno ? errno : EIO;
    write_at(s, p + whole, s->n - whole, s->pos + whole, NULL);   /* the partial block */
    write_at(s, head, hlen, 0, NULL);
    s->pos += s->n;
    s->n = 0;
    cg_sink_free(s);
}

void cg_sink_free(CgSink *s)
{
    stop_writer(s);
    for (int i = 0; i < 2; i++) {
        free(s->buf[i]);
        s->buf[i] = NULL;
    }
}
