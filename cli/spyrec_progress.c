/* spyrec_progress.c: a one-line progress display for long compilations. When
 * standard error is a terminal, spyrec shows "[load]", then
 * "[pass 8/12 fuse]" for each pass and "[codegen]", each rewriting the
 * previous one with \r; the line is erased before any other output. When standard
 * error is not a terminal (a file, a pipe, make's log) nothing is printed.
 */
#include <unistd.h>

#include "cli/cli.h"
#include "passes/pass.h"

static bool shown;                 /* progress is displayed */
static bool dirty;                 /* a progress line is on the screen */
static int npasses;                /* passes that run at this -O level */
static int level;                  /* the -O level */

void cli_progress_init(bool enabled, int opt_level)
{
    shown = enabled && isatty(STDERR_FILENO);
    level = opt_level;
    npasses = 0;
    for (int i = 0; i < pass_pipeline_len; i++)
        npasses += pass_pipeline[i].min_opt <= opt_level;
}

/* Replace the progress line with text. */
static void show(const char *text, int k, const char *name)
{
    if (!shown)
        return;
    if (k > 0)
        fprintf(stderr, "\r[pass %d/%d %s]\033[K", k, npasses, name);
    else
        fprintf(stderr, "\r[%s]\033[K", text);
    fflush(stderr);
    dirty = true;
}

void cli_progress_stage(const char *what)
{
    show(what, 0, NULL);
}

void cli_progress_pass(int index)
{
    if (index < 0 || index >= pass_pipeline_len)
        return;
    int k = 1;                     /* position among the passes that run */
    for (int i = 0; i < index; i++)
        k += pass_pipeline[i].min_opt <= level;
    show(NULL, k, pass_pipeline[index].name);
}

void cli_progress_clear(void)
{
    if (!shown || !dirty)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    dirty = false;
}
