// SPDX-License-Identifier: MIT
#include "io/writer.h"

#include <string.h>

void nbio_writer_init(nbioWriter *w, FILE *stream, char *buf, size_t cap)
{
    w->stream = stream;
    w->buf = buf;
    w->used = 0;
    w->cap = cap;
    w->failed = false;
}

void nbio_writer_drain(nbioWriter *w)
{
    if (w->used > 0 && !w->failed && fwrite(w->buf, 1, w->used, w->stream) != w->used)
        w->failed = true;
    w->used = 0;
}

bool nbio_writer_finish(nbioWriter *w)
{
    nbio_writer_drain(w);
    if (fflush(w->stream) != 0 || ferror(w->stream)) w->failed = true;
    return !w->failed;
}

void nbio_write_bytes(nbioWriter *w, const char *s, size_t len)
{
    while (len > 0) {
        if (w->used == w->cap) nbio_writer_drain(w);
        size_t n = w->cap - w->used < len ? w->cap - w->used : len;
        memcpy(w->buf + w->used, s, n);
        w->used += n;
        s += n;
        len -= n;
    }
}

void nbio_write_str(nbioWriter *w, const char *s)
{
    nbio_write_bytes(w, s, strlen(s));
}

void nbio_write_double(nbioWriter *w, double v)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    if (n > 0) nbio_write_bytes(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
