/*
 * Fuzz target: the lines ferry-swarm reads from the agent
 * (swarm/swarm_line.c), fed through a swarm_reader in reads of the sizes
 * the first byte picks, as a pipe would cut them; a put's payload is
 * taken in pieces of the same size. Checks what swarm_line.h promises of
 * each parsed line, that the payload comes out to the byte and no line
 * before its end, that a refused put header leaves the reader unframed
 * for good, and that the reader always makes room again. Seeds:
 * tests/fuzz/corpus/swarmline/.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "../../swarm/swarm_line.h"

static void
check_line(const struct swarm_line *l)
{
    unsigned char bin[16];
    size_t i;

    switch (l->cmd) {
    case SWARM_TORRENT:
    case SWARM_CERT:
    case SWARM_KEY:
    case SWARM_SAVE:
    case SWARM_PIECE:
    case SWARM_LINK:
    case SWARM_PART:
    case SWARM_FROM:
        if (l->arg_len == 0 || l->arg_len != strlen(l->arg))
            abort();
        for (i = 0; i < l->arg_len; i++)
            if ((unsigned char)l->arg[i] < 0x20 || l->arg[i] == 0x7f)
                abort();
        if (l->cmd == SWARM_PIECE && (l->piece < 0 || l->piece > INT32_MAX ||
            l->offset < 0 || l->offset > SWARM_MAX_OFFSET))
            abort();
        if (l->cmd == SWARM_LINK && (l->piece < 0 || l->piece > INT32_MAX))
            abort();
        if ((l->cmd == SWARM_PART || l->cmd == SWARM_FROM) &&
            (l->piece < 0 || l->piece > INT32_MAX || l->offset < 0 ||
            l->offset > SWARM_MAX_OFFSET || l->len < 1 ||
            l->len > SWARM_MAX_OFFSET))
            abort();
        break;
    case SWARM_LISTEN:
    case SWARM_PEER:
    case SWARM_ALLOW:
        if (inet_pton(AF_INET, l->ip, bin) != 1 &&
            inet_pton(AF_INET6, l->ip, bin) != 1)
            abort();
        if (l->cmd != SWARM_ALLOW && (l->port < (l->cmd == SWARM_PEER) ||
            l->port > 65535))
            abort();
        break;
    case SWARM_LIMIT:
        if (l->up < 0 || l->up > SWARM_MAX_RATE || l->down < 0 ||
            l->down > SWARM_MAX_RATE)
            abort();
        break;
    case SWARM_PUT:
        if (l->piece < 0 || l->piece > INT32_MAX || l->len < 1 ||
            l->len > SWARM_MAX_PUT)
            abort();
        break;
    case SWARM_START:
    case SWARM_STOP:
        break;
    default:
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_err(const char *err)
{
    if (err[0] == '\0' || memchr(err, '\n', strlen(err)))
        abort();
}

/* Takes what payload is held, step bytes at a time, until it is all
 * taken or the reader holds none of it. */
static void
take_payload(struct swarm_reader *rd, size_t step)
{
    static char buf[64];
    static struct swarm_line l;
    char err[128];
    size_t owed, k;

    while ((owed = swarm_reader_payload(rd)) > 0) {
        /* The payload's newlines end no line. */
        if (swarm_reader_next(rd, &l, err, sizeof(err)) != 0)
            abort();
        k = swarm_reader_take(rd, buf, step);
        if (k > step || k > owed || swarm_reader_payload(rd) != owed - k)
            abort();
        if (k == 0) {
            if (!swarm_reader_idle(rd))
                abort();
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct swarm_reader rd;
    static struct swarm_line l;
    char err[128];
    size_t step, k;
    int r;

    if (size == 0)
        return 0;
    step = (size_t)data[0] % 64 + 1;
    data++;
    size--;
    swarm_reader_init(&rd);
    while (size > 0) {
        k = size < step ? size : step;
        if (k > swarm_reader_room(&rd))
            k = swarm_reader_room(&rd);
        /* Drained, a reader has room: else its writer would wait for
         * ever. */
        if (k == 0)
            abort();
        swarm_reader_push(&rd, data, k);
        data += k;
        size -= k;
        for (;;) {
            take_payload(&rd, step);
            if (swarm_reader_payload(&rd) > 0)
                break;
            r = swarm_reader_next(&rd, &l, err, sizeof(err));
            if (r == 0)
                break;
            if (r == SWARM_UNFRAMED) {
                check_err(err);
                /* Nothing after it is read: not as lines, not at all. */
                if (swarm_reader_next(&rd, &l, err, sizeof(err)) !=
                    SWARM_UNFRAMED || swarm_reader_room(&rd) != 0 ||
                    !swarm_reader_idle(&rd) || swarm_reader_payload(&rd) != 0)
                    abort();
                return 0;
            }
            if (r > 0) {
                check_line(&l);
                if (l.cmd == SWARM_PUT &&
                    swarm_reader_payload(&rd) != (size_t)l.len)
                    abort();
            } else {
                check_err(err);
            }
        }
    }
    return 0;
}
