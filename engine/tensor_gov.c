/*
 * tensor_gov.c: coded or whole checkpoint blocks, by the rate each gives
 * (tensor_gov.h).
 */
#include "tensor_gov.h"

#include <string.h>

void
tensor_gov_init(struct tensor_gov *g, enum tensor_gov_mode start)
{
    memset(g, 0, sizeof(*g));
    g->mode = start;
    g->hold_next = TENSOR_GOV_HOLD;
}

/* The trial window is over: the faster side is kept, for longer each
 * time the side that was left wins again. */
static int
gov_decide(struct tensor_gov *g)
{
    enum tensor_gov_mode winner = g->whole_rate >
        g->code_rate * TENSOR_GOV_MARGIN ? TENSOR_GOV_WHOLE :
        TENSOR_GOV_CODE;
    enum tensor_gov_mode was = g->mode;

    g->probing = 0;
    if (winner == g->probing_from)
        g->hold_next = g->hold_next * 2 > TENSOR_GOV_HOLD_MAX ?
            TENSOR_GOV_HOLD_MAX : g->hold_next * 2;
    else
        g->hold_next = TENSOR_GOV_HOLD;
    /* Coding that waits for the link, against whole blocks that were
     * slower: only a link that speeds up could change that. */
    if (winner == TENSOR_GOV_CODE && g->code_link_bound)
        g->hold_next = TENSOR_GOV_HOLD_MAX;
    g->hold = g->hold_next;
    g->mode = winner;
    return winner != was;
}

/* A window of the mode held is over: 1 to try the other. */
static int
gov_try_other(struct tensor_gov *g)
{
    if (g->hold > 0) {
        g->hold--;
        return 0;
    }
    g->probing = 1;
    g->probing_from = g->mode;
    g->mode = g->mode == TENSOR_GOV_CODE ? TENSOR_GOV_WHOLE :
        TENSOR_GOV_CODE;
    return 1;
}

int
tensor_gov_block(struct tensor_gov *g, uint64_t len, uint64_t codec_ns,
    uint64_t now_ns)
{
    uint64_t wall;
    double rate;
    int link_bound;

    if (g->t0 == 0)
        g->t0 = now_ns;
    g->in += len;
    g->busy += codec_ns;
    wall = now_ns > g->t0 ? now_ns - g->t0 : 0;
    if (g->in < TENSOR_GOV_WINDOW_BYTES || wall < TENSOR_GOV_WINDOW_NS)
        return 0;
    rate = (double)g->in * 1e9 / (double)wall;
    link_bound = g->busy * 2 < wall;
    g->t0 = now_ns;
    g->in = g->busy = 0;
    if (!g->warm) {
        g->warm = 1;
        return 0;
    }
    if (g->mode == TENSOR_GOV_CODE)
        g->code_rate = rate;
    else
        g->whole_rate = rate;
    if (g->mode == TENSOR_GOV_CODE)
        g->code_link_bound = link_bound;
    if (g->probing)
        return gov_decide(g);
    return gov_try_other(g);
}
