/* fe_model.c: fe_load_model - choose the frontend for a model file.
 *
 * A zip archive (torch.export .pt2) starts with "PK\x03\x04"; anything else is taken
 * as ONNX (a protobuf has no magic). The extension decides when the file cannot be
 * read here, so that the chosen frontend reports the problem in its own words.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fe_internal.h"

/* Whether the file starts like a zip archive; *readable says if it could be read. */
static bool starts_as_zip(const char *path, bool *readable)
{
    unsigned char head[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *readable = fd >= 0;
    if (fd < 0)
        return false;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n == 4 && !memcmp(head, "PK\x03\x04", 4);
}

/* True when path ends with ext. */
static bool has_ext(const char *path, const char *ext)
{
    size_t a = strlen(path), b = strlen(ext);
    return a >= b && !strcmp(path + a - b, ext);
}

/* Load path with the frontend its content (or extension) calls for. */
IrGraph *fe_load_model(const char *path, IrDiag *diag, const FeOptions *opt)
{
    bool readable;
    bool zip = starts_as_zip(path, &readable);
    if (zip || (!readable && has_ext(path, ".pt2")))
        return fe_load_pt2(path, diag, opt);
    return fe_load_onnx(path, diag, opt);
}
