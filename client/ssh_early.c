/*
 * ssh_early.c: further connections started while the first one logs in
 * (ssh.h, ssh_early_start). Each runs in a thread of its own: TCP connect
 * and key exchange at once, then a wait at the gate; the host key check
 * and the login come after the first connection's, which may have asked
 * the user (an unknown host key, a passphrase) what these reuse without
 * asking.
 */
#include "ssh.h"

#include <poll.h>
#include <string.h>

#include <uv.h>

#include "../common/alloc.h"
#include "ssh_int.h"

/* The first login opens or shuts the gate. */
enum { GATE_WAIT, GATE_OPEN, GATE_SHUT };

struct ssh_early_conn {
    struct ssh_early *e;
    uv_thread_t thr;
    int joined;
    struct ssh_conn *c;       /* logged in, once joined */
    int err;
    char msg[256];
};

struct ssh_early {
    struct ssh_conn_opts o;   /* never interactive */
    uv_mutex_t mu;
    uv_cond_t cv;
    int gate;
    unsigned n, next;         /* started; the next one to hand out */
    struct ssh_early_conn conns[SSH_EARLY_MAX];
};

/* Waits for the gate; 1 when it opened. Ctrl-C shuts it. */
static int
early_gate_wait(struct ssh_early *e)
{
    int gate;

    uv_mutex_lock(&e->mu);
    while ((gate = e->gate) == GATE_WAIT && !ssh_interrupted())
        (void)uv_cond_timedwait(&e->cv, &e->mu, 50 * 1000000ull);
    uv_mutex_unlock(&e->mu);
    return gate == GATE_OPEN && !ssh_interrupted();
}

static void
early_conn_run(void *arg)
{
    struct ssh_early_conn *ec = arg;
    struct ssh_early *e = ec->e;
    struct ssh_conn *c;
    int r;

    ec->err = ssh_conn_begin(&e->o, &c, ec->msg, sizeof(ec->msg));
    if (ec->err != 0)
        return;
    if (!early_gate_wait(e)) {
        ec->err = ssh_interrupted() ? FERRY_ERR_INTERRUPTED :
            FERRY_ERR_CLOSED;
        snprintf(ec->msg, sizeof(ec->msg), "%s",
            ferry_strerror(ec->err));
        ssh_conn_close(c);
        return;
    }
    /* The wait was the first login's, not this connection's time. */
    ssh_deadline_reset(c);
    if ((r = ssh_conn_finish(&e->o, c, ec->msg, sizeof(ec->msg))) != 0) {
        ec->err = r;
        return;
    }
    ec->c = c;
}

struct ssh_early *
ssh_early_start(const struct ssh_conn_opts *o, unsigned n)
{
    struct ssh_early *e;
    unsigned k;

    if (n > SSH_EARLY_MAX)
        n = SSH_EARLY_MAX;
    if (n == 0 || (e = xcalloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->o = *o;
    e->o.interactive = 0;
    e->o.on_handshake = NULL;
    if (uv_mutex_init(&e->mu) != 0) {
        xfree(e);
        return NULL;
    }
    if (uv_cond_init(&e->cv) != 0) {
        uv_mutex_destroy(&e->mu);
        xfree(e);
        return NULL;
    }
    for (k = 0; k < n; k++) {
        struct ssh_early_conn *ec = &e->conns[k];

        ec->e = e;
        if (uv_thread_create(&ec->thr, early_conn_run, ec) != 0)
            break;
        e->n++;
    }
    return e;
}

void
ssh_early_gate(struct ssh_early *e, int open)
{
    if (e == NULL)
        return;
    uv_mutex_lock(&e->mu);
    if (e->gate == GATE_WAIT)
        e->gate = open ? GATE_OPEN : GATE_SHUT;
    uv_cond_broadcast(&e->cv);
    uv_mutex_unlock(&e->mu);
}

unsigned
ssh_early_left(const struct ssh_early *e)
{
    return e == NULL ? 0 : e->n - e->next;
}

int
ssh_early_take(struct ssh_early *e, struct ssh_conn **out, char *err,
    size_t errlen)
{
    struct ssh_early_conn *ec;
    unsigned k;

    *out = NULL;
    uv_mutex_lock(&e->mu);
    k = e->next < e->n ? e->next++ : e->n;
    uv_mutex_unlock(&e->mu);
    if (k == e->n)
        return FERRY_ERR_CLOSED;
    ec = &e->conns[k];
    (void)uv_thread_join(&ec->thr);
    ec->joined = 1;
    if (ec->err != 0) {
        snprintf(err, errlen, "%s", ec->msg);
        return ec->err;
    }
    *out = ec->c;
    ec->c = NULL;
    return 0;
}

void
ssh_early_free(struct ssh_early *e)
{
    unsigned k;

    if (e == NULL)
        return;
    ssh_early_gate(e, 0);
    for (k = 0; k < e->n; k++) {
        struct ssh_early_conn *ec = &e->conns[k];

        if (!ec->joined)
            (void)uv_thread_join(&ec->thr);
        ssh_conn_close(ec->c);
    }
    uv_cond_destroy(&e->cv);
    uv_mutex_destroy(&e->mu);
    xfree(e);
}
