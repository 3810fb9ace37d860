/* side.c: one end of a transfer (side.h). */
#include "side.h"

#include "../common/alloc.h"
#include "../proto/limits.h"

struct side {
    struct xfer *x;
    uint32_t flags, block_size;
    int sending;
    struct plan *plan;
    struct dest *dest;
    struct incoming *in;
    const char *const *tops;     /* stream 0 of a receiving side */
    size_t ntops;
    int tell_lost;
    /* A role per stream; which kind, sending says. */
    void *role[PROTO_MAX_STREAMS];
};

static struct side *
side_alloc(int sending, uint32_t block_size, uint32_t flags, struct xfer *x)
{
    struct side *sd = xcalloc(1, sizeof(*sd));

    if (sd == NULL)
        return NULL;
    sd->x = x;
    sd->flags = flags;
    sd->block_size = block_size;
    sd->sending = sending;
    return sd;
}

struct side *
side_new_send(struct manifest *mf, int live, uint32_t block_size,
    uint32_t flags, const struct volsend_opts *vo, struct xfer *x)
{
    struct side *sd = side_alloc(1, block_size, flags, x);
    struct volsend *vs;

    if (sd == NULL)
        return NULL;
    sd->plan = live ? plan_new_live(mf, block_size, flags, x) :
        plan_new(mf, block_size, flags, x);
    if (sd->plan == NULL)
        goto fail;
    if (vo != NULL) {
        if ((vs = volsend_new(sd->plan, vo, x)) == NULL)
            goto fail;
        plan_set_packer(sd->plan, vs);
    }
    return sd;
fail:
    side_free(sd);
    return NULL;
}

struct side *
side_new_recv(const char *path, uint32_t flags,
    const uint8_t transfer_id[16], uint32_t block_size, struct xfer *x)
{
    struct side *sd = side_alloc(0, block_size, flags, x);

    if (sd == NULL)
        return NULL;
    if ((sd->dest = dest_new(path, flags, transfer_id, x)) == NULL ||
        (sd->in = incoming_new(sd->dest, block_size, x)) == NULL ||
        incoming_volrecv(sd->in) == NULL) {
        side_free(sd);
        return NULL;
    }
    return sd;
}

void
side_free(struct side *sd)
{
    unsigned k;

    if (sd == NULL)
        return;
    for (k = 0; k < PROTO_MAX_STREAMS; k++)
        side_stream_end(sd, k);
    incoming_free(sd->in);
    dest_free(sd->dest);
    plan_free(sd->plan);
    xfree(sd);
}

void
side_set_tops(struct side *sd, const char *const *names, size_t n)
{
    sd->tops = names;
    sd->ntops = n;
}

void
side_set_tell_lost(struct side *sd)
{
    sd->tell_lost = 1;
}

int
side_is_sender(const struct side *sd)
{
    return sd->sending;
}

struct plan *
side_plan(const struct side *sd)
{
    return sd->plan;
}

struct dest *
side_dest(const struct side *sd)
{
    return sd->dest;
}

struct incoming *
side_incoming(const struct side *sd)
{
    return sd->in;
}

int
side_stream(struct side *sd, unsigned index, conn_step_fn **step,
    void **role)
{
    struct receiver *rc;

    if (index >= PROTO_MAX_STREAMS)
        return FERRY_ERR_PROTOCOL;
    side_stream_end(sd, index);
    if (sd->sending) {
        if ((sd->role[index] = sender_new(sd->plan, index, sd->x)) == NULL)
            return FERRY_ERR_NOMEM;
        *step = sender_step;
    } else {
        if ((rc = receiver_new(sd->dest, sd->in, index, sd->flags,
            sd->block_size, sd->x)) == NULL)
            return FERRY_ERR_NOMEM;
        sd->role[index] = rc;
        if (index == 0 && sd->ntops > 0 &&
            receiver_expect_tops(rc, sd->tops, sd->ntops) != 0)
            return FERRY_ERR_NOMEM;
        *step = receiver_step;
    }
    *role = sd->role[index];
    return 0;
}

struct sender *
side_sender(const struct side *sd, unsigned index)
{
    return sd->sending && index < PROTO_MAX_STREAMS ? sd->role[index] :
        NULL;
}

struct receiver *
side_receiver(const struct side *sd, unsigned index)
{
    return !sd->sending && index < PROTO_MAX_STREAMS ? sd->role[index] :
        NULL;
}

void
side_stream_end(struct side *sd, unsigned index)
{
    if (index >= PROTO_MAX_STREAMS || sd->role[index] == NULL)
        return;
    if (sd->sending)
        sender_free(sd->role[index]);
    else
        receiver_free(sd->role[index]);
    sd->role[index] = NULL;
}

int
side_stream_lost(struct side *sd, unsigned index)
{
    if (index == 0 || index >= PROTO_MAX_STREAMS)
        return 0;
    if (sd->sending) {
        plan_stream_lost(sd->plan, index);
        return 1;
    }
    if (sd->tell_lost && sd->role[0] != NULL) {
        receiver_retire_stream(sd->role[0], index);
        return 1;
    }
    return 0;
}

void
side_add_flags(struct side *sd, uint32_t flags)
{
    sd->flags |= flags;
    if (sd->plan != NULL)
        plan_set_flags(sd->plan, flags);
    if (sd->dest != NULL)
        dest_add_flags(sd->dest, flags);
}

void
side_restart(struct side *sd)
{
    if (sd->plan != NULL) {
        plan_restart(sd->plan);
    } else {
        incoming_restart(sd->in);
        dest_restart(sd->dest);
    }
}
