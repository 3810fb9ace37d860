#include "probe.h"

#include <string.h>

#include "../common/alloc.h"
#include "../proto/frame.h"
#include "../proto/limits.h"
#include "../proto/msg.h"

/* Data that no link compresses: a xorshift stream. */
static uint8_t *
probe_fill_new(void)
{
    uint8_t *fill = xmalloc(PROTO_MAX_PROBE_DATA);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t i;

    if (fill == NULL)
        return NULL;
    for (i = 0; i < PROTO_MAX_PROBE_DATA; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(fill + i, &x, 8);
    }
    return fill;
}

/* *left bytes of PROBE data, a message's worth a frame, up to a step's
 * budget; what is left stays in *left. */
static int
probe_put_data(struct buf *out, const uint8_t *fill, uint64_t *left)
{
    size_t start = buf_used(out);
    struct msg_probe m;
    int r;

    while (*left > 0 && buf_used(out) - start < CONN_STEP_BUDGET) {
        memset(&m, 0, sizeof(m));
        m.data = fill;
        m.len = *left < PROTO_MAX_PROBE_DATA ? (size_t)*left :
            PROTO_MAX_PROBE_DATA;
        if ((r = msg_probe_encode(out, &m)) != 0)
            return r;
        *left -= m.len;
    }
    return 0;
}

/* The agent's side */

struct probe_answer {
    uint64_t owed;   /* bytes asked for and not yet sent */
    int ended;
    uint8_t *fill;
};

struct probe_answer *
probe_answer_new(void)
{
    struct probe_answer *pa = xcalloc(1, sizeof(*pa));

    if (pa != NULL && (pa->fill = probe_fill_new()) == NULL) {
        xfree(pa);
        return NULL;
    }
    return pa;
}

void
probe_answer_free(struct probe_answer *pa)
{
    if (pa == NULL)
        return;
    xfree(pa->fill);
    xfree(pa);
}

int
probe_answer_step(void *role, struct conn_step *st)
{
    struct probe_answer *pa = role;
    struct msg_probe m;
    struct frame f;
    size_t off = 0;
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0) {
        if (pa->ended)
            return FERRY_ERR_PROTOCOL;
        if (f.type == MSG_END) {
            if ((r = msg_end_decode(f.payload, f.len)) != 0)
                return r;
            pa->ended = 1;
            continue;
        }
        if (f.type != MSG_PROBE)
            return FERRY_ERR_PROTOCOL;
        if ((r = msg_probe_decode(f.payload, f.len, &m)) != 0)
            return r;
        /* What the client may have us owe it is bounded. */
        if (m.ask > PROTO_MAX_PROBE_ASK - pa->owed)
            return FERRY_ERR_TOO_LARGE;
        pa->owed += m.ask;
    }
    if (r < 0)
        return r;
    if ((r = probe_put_data(st->out, pa->fill, &pa->owed)) != 0)
        return r;
    if (pa->owed > 0)
        st->more = 1;
    else if (pa->ended)
        st->done = 1;
    else if (st->eof)
        return FERRY_ERR_CLOSED;
    return 0;
}

/* The client's side */

enum probe_phase { P_PING, P_DOWN, P_UP, P_END, P_DONE };

struct probe {
    uint64_t (*now)(void);
    enum probe_phase phase;
    unsigned pings;
    int sending;          /* up: this round's data is going out */
    int waiting;          /* a request is out: its answer is due */
    uint64_t t0;          /* the probe's start */
    uint64_t sent_at;     /* this round's start */
    uint64_t round;       /* this round's bytes */
    uint64_t left;        /* up: of them, still to send */
    uint64_t due, got;    /* bytes of answer due, and received */
    struct probe_result res;
    uint8_t *fill;
};

struct probe *
probe_new(uint64_t (*now)(void))
{
    struct probe *p = xcalloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    if ((p->fill = probe_fill_new()) == NULL) {
        xfree(p);
        return NULL;
    }
    p->now = now;
    p->res.rtt_ns = UINT64_MAX;
    return p;
}

void
probe_free(struct probe *p)
{
    if (p == NULL)
        return;
    xfree(p->fill);
    xfree(p);
}

int
probe_done(const struct probe *p)
{
    return p->phase == P_DONE;
}

const struct probe_result *
probe_result(const struct probe *p)
{
    return &p->res;
}

/* A round of bytes took t: the rate leaves one round trip out, but never
 * more than half of t. Then the next round is 4 times as big while a
 * round is quick and the budget lasts; else the next phase. */
static void
probe_round_done(struct probe *p, uint64_t t, uint64_t *bytes,
    uint64_t *ns)
{
    uint64_t rtt = p->res.rtt_ns;

    *bytes = p->round;
    *ns = t > 2 * rtt ? t - rtt : (t + 1) / 2;
    if (*ns == 0)
        *ns = 1;
    if (t < PROBE_ROUND_NS && p->round * 4 <= PROTO_MAX_PROBE_ASK &&
        p->now() - p->t0 < PROBE_BUDGET_NS) {
        p->round *= 4;
        return;
    }
    p->round = PROBE_FIRST_ROUND;
    p->phase++;
}

int
probe_on_frame(struct probe *p, const struct frame *f)
{
    struct msg_probe m;
    uint64_t t;
    int r;

    if (f->type != MSG_PROBE)
        return FERRY_ERR_PROTOCOL;
    if ((r = msg_probe_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (m.ask != 0 || !p->waiting || m.len > p->due - p->got)
        return FERRY_ERR_PROTOCOL;
    p->got += m.len;
    if (p->got < p->due)
        return 0;
    p->waiting = 0;
    t = p->now() - p->sent_at;
    /* A request is out only in these three phases (probe_send). */
    if (p->phase == P_PING) {
        if (t < p->res.rtt_ns)
            p->res.rtt_ns = t;
        if (++p->pings == PROBE_PINGS) {
            p->phase = P_DOWN;
            p->round = PROBE_FIRST_ROUND;
        }
    } else if (p->phase == P_DOWN) {
        probe_round_done(p, t, &p->res.down_bytes, &p->res.down_ns);
    } else {
        probe_round_done(p, t, &p->res.up_bytes, &p->res.up_ns);
    }
    return 0;
}

/* Asks for n bytes back. */
static int
probe_ask(struct probe *p, struct buf *out, uint64_t n)
{
    struct msg_probe m;

    memset(&m, 0, sizeof(m));
    m.ask = (uint32_t)n;
    p->waiting = 1;
    p->due = n;
    p->got = 0;
    return msg_probe_encode(out, &m);
}

int
probe_send(struct probe *p, struct conn_step *st)
{
    int r;

    if (p->t0 == 0)
        p->t0 = p->now();
    if (p->waiting)
        return 0;
    switch (p->phase) {
    case P_PING:
        p->sent_at = p->now();
        return probe_ask(p, st->out, 1);
    case P_DOWN:
        p->sent_at = p->now();
        return probe_ask(p, st->out, p->round);
    case P_UP:
        if (!p->sending) {
            p->sending = 1;
            p->left = p->round;
            p->sent_at = p->now();
        }
        if ((r = probe_put_data(st->out, p->fill, &p->left)) != 0)
            return r;
        if (p->left > 0) {
            st->more = 1;
            return 0;
        }
        p->sending = 0;
        return probe_ask(p, st->out, 1);
    case P_END:
        p->phase = P_DONE;
        st->done = 1;
        return msg_end_encode(st->out);
    default:
        return 0;
    }
}
