/*
 * The probe of `ferry status` (engine/probe.c), both sides frame in,
 * frame out: the client's rounds against the agent's answers on a clock
 * the test moves, and each side against a peer that breaks the rules.
 */
#include <string.h>

#include "../../engine/probe.h"
#include "../../proto/frame.h"
#include "../../proto/limits.h"
#include "../../proto/msg.h"
#include "check.h"

static uint64_t fake_now;

static uint64_t
fake_clock(void)
{
    return fake_now;
}

/* One step of a role over in (whole frames); what it sent lands in out. */
static int
step(conn_step_fn *fn, void *role, const struct buf *in, struct buf *out,
    int *more, int *done)
{
    struct conn_step st;
    int r;

    memset(&st, 0, sizeof(st));
    st.in = in != NULL ? buf_ptr(in) : NULL;
    st.in_len = in != NULL ? buf_used(in) : 0;
    st.out = out;
    r = fn(role, &st);
    *more = st.more;
    *done = st.done;
    return r;
}

static int
probe_send_step(void *role, struct conn_step *st)
{
    return probe_send(role, st);
}

/* Feeds every frame of in to the client's probe. */
static int
feed(struct probe *p, const struct buf *in)
{
    size_t off = 0, used;
    struct frame f;
    int r;

    while (off < buf_used(in)) {
        CHECK_OK(frame_parse(buf_ptr(in) + off, buf_used(in) - off, &f,
            &used));
        off += used;
        if ((r = probe_on_frame(p, &f)) != 0)
            return r;
    }
    return 0;
}

/*
 * The whole conversation, the client against the agent. Each agent
 * answer arrives ms_per_round after its request went: quick rounds grow
 * fourfold up to PROTO_MAX_PROBE_ASK, slow ones end their phase at once.
 */
static void
run_probe(uint64_t ms_per_round, struct probe_result *res, int *rounds)
{
    struct probe *p;
    struct probe_answer *pa;
    struct buf c2a, a2c;
    int more, done, adone = 0, n = 0;

    fake_now = 1000000000ull;
    CHECK((p = probe_new(fake_clock)) != NULL);
    CHECK((pa = probe_answer_new()) != NULL);
    buf_init(&c2a, 64u << 20);
    buf_init(&a2c, 64u << 20);
    while (!probe_done(p)) {
        CHECK(n++ < 1000);
        buf_reset(&c2a);
        do {
            CHECK_OK(step(probe_send_step, p, NULL, &c2a, &more, &done));
        } while (more);
        buf_reset(&a2c);
        CHECK_OK(step(probe_answer_step, pa, &c2a, &a2c, &more, &adone));
        while (more) {
            struct buf none;

            buf_init(&none, 1);
            CHECK_OK(step(probe_answer_step, pa, &none, &a2c, &more,
                &adone));
            buf_cleanup(&none);
        }
        fake_now += ms_per_round * 1000000ull;
        CHECK_OK(feed(p, &a2c));
        if (done)
            break;
    }
    CHECK(probe_done(p));
    CHECK_EQ_INT(adone, 1);   /* the agent saw the END */
    *res = *probe_result(p);
    *rounds = n;
    buf_cleanup(&c2a);
    buf_cleanup(&a2c);
    probe_answer_free(pa);
    probe_free(p);
}

TEST(probe_rounds_grow)
{
    struct probe_result r;
    int n;

    /* 10 ms a round: every round is quick, so each phase grows to the
     * most one message may ask. */
    run_probe(10, &r, &n);
    CHECK_EQ_U64(r.rtt_ns, 10000000);
    CHECK_EQ_U64(r.down_bytes, PROTO_MAX_PROBE_ASK);
    CHECK_EQ_U64(r.up_bytes, PROTO_MAX_PROBE_ASK);
    /* A round trip is left out of the rate's time, but at most half. */
    CHECK_EQ_U64(r.down_ns, 5000000);
    /* 3 pings, 4 rounds down, 4 up, END. */
    CHECK_EQ_INT(n, 3 + 4 + 4 + 1);
}

TEST(probe_slow_rounds_stop)
{
    struct probe_result r;
    int n;

    /* 400 ms a round: each phase stops after its first round. */
    run_probe(400, &r, &n);
    CHECK_EQ_U64(r.rtt_ns, 400000000);
    CHECK_EQ_U64(r.down_bytes, PROBE_FIRST_ROUND);
    CHECK_EQ_U64(r.up_bytes, PROBE_FIRST_ROUND);
    CHECK_EQ_U64(r.down_ns, 200000000);
    CHECK_EQ_INT(n, 3 + 1 + 1 + 1);
}

/* The client takes only what it asked for, and never a request. */
TEST(probe_client_rules)
{
    struct probe *p;
    struct buf out, in;
    struct msg_probe m;
    uint8_t data[8] = { 0 };
    struct frame f;
    size_t used;
    int more, done;

    fake_now = 1;
    CHECK((p = probe_new(fake_clock)) != NULL);
    buf_init(&out, 1 << 20);
    buf_init(&in, 1 << 20);
    memset(&m, 0, sizeof(m));
    m.data = data;
    m.len = 1;
    /* Nothing asked yet. */
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_EQ_ERR(feed(p, &in), FERRY_ERR_PROTOCOL);
    /* The ping asks for 1 byte: 2 are too many. */
    CHECK_OK(step(probe_send_step, p, NULL, &out, &more, &done));
    CHECK_OK(frame_parse(buf_ptr(&out), buf_used(&out), &f, &used));
    CHECK_EQ_INT(f.type, MSG_PROBE);
    buf_reset(&in);
    m.len = 2;
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_EQ_ERR(feed(p, &in), FERRY_ERR_PROTOCOL);
    /* The agent asks. */
    buf_reset(&in);
    m.len = 1;
    m.ask = 1;
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_EQ_ERR(feed(p, &in), FERRY_ERR_PROTOCOL);
    /* Another message. */
    buf_reset(&in);
    CHECK_OK(msg_end_encode(&in));
    CHECK_EQ_ERR(feed(p, &in), FERRY_ERR_PROTOCOL);
    /* The answer as asked. */
    buf_reset(&in);
    m.ask = 0;
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_OK(feed(p, &in));
    CHECK(!probe_done(p));
    buf_cleanup(&in);
    buf_cleanup(&out);
    probe_free(p);
}

/* The agent owes at most PROTO_MAX_PROBE_ASK, takes PROBE and END only,
 * nothing after END, and a close before END is an error. */
TEST(probe_answer_rules)
{
    struct probe_answer *pa;
    struct buf in, out;
    struct msg_probe m;
    struct frame f;
    size_t used;
    int more, done;

    buf_init(&in, 1 << 20);
    buf_init(&out, 64u << 20);
    memset(&m, 0, sizeof(m));

    CHECK((pa = probe_answer_new()) != NULL);
    m.ask = PROTO_MAX_PROBE_ASK;
    CHECK_OK(msg_probe_encode(&in, &m));
    m.ask = 1;
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_EQ_ERR(step(probe_answer_step, pa, &in, &out, &more, &done),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(buf_used(&out), 0);
    probe_answer_free(pa);

    CHECK((pa = probe_answer_new()) != NULL);
    buf_reset(&in);
    CHECK_OK(msg_end_encode(&in));
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_EQ_ERR(step(probe_answer_step, pa, &in, &out, &more, &done),
        FERRY_ERR_PROTOCOL);
    probe_answer_free(pa);

    CHECK((pa = probe_answer_new()) != NULL);
    buf_reset(&in);
    CHECK_OK(msg_summary_encode(&in, &(struct msg_summary){ 0, 0, 0, 0 }));
    CHECK_EQ_ERR(step(probe_answer_step, pa, &in, &out, &more, &done),
        FERRY_ERR_PROTOCOL);
    probe_answer_free(pa);

    /* Asked for 3 bytes, it sends 3, then ends with the END. */
    CHECK((pa = probe_answer_new()) != NULL);
    buf_reset(&in);
    m.ask = 3;
    CHECK_OK(msg_probe_encode(&in, &m));
    CHECK_OK(step(probe_answer_step, pa, &in, &out, &more, &done));
    CHECK_OK(frame_parse(buf_ptr(&out), buf_used(&out), &f, &used));
    CHECK_EQ_U64(used, buf_used(&out));
    CHECK_EQ_INT(f.type, MSG_PROBE);
    CHECK_OK(msg_probe_decode(f.payload, f.len, &m));
    CHECK_EQ_U64(m.len, 3);
    CHECK_EQ_INT(m.ask, 0);
    CHECK(!done && !more);
    buf_reset(&in);
    CHECK_OK(msg_end_encode(&in));
    CHECK_OK(step(probe_answer_step, pa, &in, &out, &more, &done));
    CHECK(done);
    probe_answer_free(pa);

    buf_cleanup(&in);
    buf_cleanup(&out);
}
