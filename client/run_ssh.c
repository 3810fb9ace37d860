/*
 * run_ssh.c: a run's SSH (run_int.h): the agent to upload found and the
 * ssh config resolved, stream 0's libssh2 session opened and closed,
 * and what its key exchange says of the link (libssh2 or the ssh program
 * for the streams, streams started beside the login). Apart from
 * run.c, which runs the attempts over it.
 */
#include "run_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "../common/log.h"
#include "remote.h"
#include "ssh.h"
#include "sshcfg.h"

/* Finds the agent to upload and resolves the SSH settings. */
int
run_setup(struct run *rn, char *msg, size_t msglen)
{
    const struct cli *cli = rn->cli;
    struct sshcfg_overrides ov;
    int r;

    remote_agent_init(&rn->agent, cli);
    if (cli->remote.local)
        return 0;
    if (cli->ssh_cmd != NULL) {
        rn->use_cmd = 1;
        return 0;
    }
    remote_ssh_overrides(cli, &ov);
    if ((r = sshcfg_resolve(cli->remote.host, &ov, &rn->cfg, msg,
        msglen)) != 0) {
        if (r == FERRY_ERR_USAGE && msg[0] != '\0') {
            char tmp[600];

            snprintf(tmp, sizeof(tmp), "%.200s: ssh config: %.300s",
                cli->remote.host, msg);
            snprintf(msg, msglen, "%s", tmp);
        } else {
            snprintf(msg, msglen, "%s: cannot resolve the ssh config: %s",
                cli->remote.host, ferry_strerror(r));
        }
        return r;
    }
    rn->have_cfg = 1;
    sshcfg_prefer_gcm(&rn->cfg, sshcfg_cpu_aes_fast(), rn->agent.ssh_ciphers,
        sizeof(rn->agent.ssh_ciphers));
    if (rn->cfg.proxy != NULL) {
        /* libssh2 cannot hop; OpenSSH can. */
        log_info("%s: uses ProxyJump/ProxyCommand: running it through ssh",
            cli->remote.host);
        rn->use_cmd = 1;
        return 0;
    }
    if ((r = ssh_global_init()) != 0) {
        snprintf(msg, msglen, "cannot initialise libssh2");
        return r;
    }
    /* Over what the bytes go is chosen by the link, once libssh2 has
     * timed its key exchange (run_ssh_handshake). */
    if ((cli->cmd == CMD_PUSH || cli->cmd == CMD_PULL) && remote_have_ssh())
        rn->link_choose = 1;
    return 0;
}

/*
 * Stream 0's key exchange is done; its time says how long the link is
 * (ssh.h, on_handshake). Once per run:
 * - On a short link OpenSSH carries the bulk of the bytes, with AES-GCM
 *   where libssh2 1.10 takes AES-CTR 16 bytes per call and HMAC-SHA2
 *   beside it, which is what binds there (docs/DESIGN.md, "Over what"):
 *   a push's or pull's streams after the first, which take every run
 *   once up (OPEN_F_SPARE_STREAM0, run_env_link); stream 0 stays on this
 *   session, which is ready now (an ssh login costs 0.15-0.19 s more).
 *   A pull with -j 1 goes all through ssh (returns 1: libssh2 logs in,
 *   then closes).
 *   On a long link libssh2 carries them: the link binds there, and
 *   libssh2's 16 MiB window lets one stream of a pull take eight times
 *   what OpenSSH's 2 MiB does while the others start.
 * - On a long link, a push worth more streams, and any pull (its size
 *   comes only with PLAN), starts their connections now, beside the
 *   login (ssh_early_start).
 */
static int
run_ssh_handshake(void *ctx, uint64_t ms, uint64_t rtt_ms)
{
    struct run *rn = ctx;
    uint64_t bytes = 0;
    struct width_link link = { 0, 0 };
    unsigned n;

    if (rn->early_tried++ > 0 || rn->op != NULL)
        return 0;
    if (rn->link_choose) {
        rn->link_choose = 0;
        /* A passphrase asked for once serves every stream and login of
         * ours; the ssh program would ask again for each. */
        if (ms < ATTEMPT_LONG_CONNECT_MS && !ssh_auth_would_ask(&rn->cfg)) {
            /* A pull kept to one stream: its bytes are all stream 0's,
             * and libssh2 decrypts them at 60% of ssh's rate here (a
             * 512 MiB pull 1.94 s against 1.16). */
            if (rn->cli->cmd == CMD_PULL && rn->cli->streams == 1)
                return 1;
            /* Else this session carries stream 0, which starts at once
             * (an ssh login costs 0.15-0.19 s here, more than a small
             * push or pull takes), and the further streams, which come
             * when it is worth them, go through ssh, and carry the
             * runs. */
            rn->more_by_cmd = 1;
            return 0;
        }
    }
    if (rn->cli->cmd == CMD_PULL) {
        bytes = UINT64_MAX;
    } else if (rn->cli->cmd != CMD_PUSH) {
        return 0;
    } else if (atomic_load(&rn->scan_finished) && rn->scan_err == 0) {
        /* The scan, in the pool, is done already for a few big files. */
        bytes = rn->scan_mf->bytes;
    }
    if (ms >= ATTEMPT_LONG_CONNECT_MS) {
        link.rtt_ms = rtt_ms;
        link.window = rn->cli->cmd == CMD_PUSH ? SSH_PEER_WINDOW_GUESS :
            ssh_recv_window(ms, rtt_ms);
    }
    if ((n = attempt_ahead(rn->cli, &link, bytes)) > 0)
        rn->early = rn->env.early = ssh_early_start(&rn->early_opts, n);
    log_debug("streams: the key exchange took %llu ms (a round trip of "
        "%llu); %u more started beside the login", (unsigned long long)ms,
        (unsigned long long)rtt_ms, ssh_early_left(rn->early));
    return 0;
}

/* Opens the libssh2 session, if that is the transport and none is open. */
int
run_ssh_open(struct run *rn, char *msg, size_t msglen)
{
    struct ssh_conn_opts so;
    uint64_t t0 = uv_hrtime(), waited = ssh_tty_waited_ms();
    int r;

    memset(&so, 0, sizeof(so));
    so.cfg = &rn->cfg;
    so.display = rn->cli->remote.host;
    so.interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
    if (rn->cli->remote.local || rn->use_cmd || rn->ssh != NULL)
        return 0;
    if (!rn->early_tried) {
        rn->early_opts = so;
        so.on_handshake = run_ssh_handshake;
        so.ctx = rn;
    }
    r = ssh_conn_open(&so, &rn->ssh, msg, msglen);
    /* Its round trips hint at the link's length (ssh_login_link); what a
     * prompt waited on the user does not. */
    if (r == 0 && rn->env.connect_ms == 0) {
        rn->env.connect_ms = (uv_hrtime() - t0) / 1000000 + 1 -
            (ssh_tty_waited_ms() - waited);
        rn->env.auth_ms = so.auth_ms;
        rn->env.link = attempt_link_of(rn->ssh,
            attempt_env_link(&rn->env) == 1, rn->cli->cmd == CMD_PUSH);
        log_debug("the first login took %llu ms, %llu of it to "
            "authenticate", (unsigned long long)rn->env.connect_ms,
            (unsigned long long)rn->env.auth_ms);
    }
    /* Streams started beside the login because its key exchange took
     * long are not wanted where the login says the link is short after
     * all (a server slow to start), unless -j asked for them. */
    if (rn->early != NULL && rn->cli->streams == 0 &&
        attempt_env_link(&rn->env) == 0) {
        log_debug("streams: the login says the link is short: the %u "
            "started beside it are closed", ssh_early_left(rn->early));
        ssh_early_free(rn->early);
        rn->early = rn->env.early = NULL;
    }
    ssh_early_gate(rn->early, r == 0 && rn->ssh != NULL);
    if (r == 0 && rn->ssh == NULL) {
        /* A pull of one stream on a short link: the key was checked
         * (changed ones refused whatever the ssh config says, unknown
         * ones asked about, so that OpenSSH finds it in known_hosts) and
         * the login tried in our words; ssh carries the bytes. */
        log_debug("a short link: the bytes go through ssh");
        rn->use_cmd = rn->env.use_cmd = 1;
        rn->ssh_login_next = 1;
    }
    /* Only keys libssh2 cannot sign with (RSA) would do: OpenSSH can,
     * as for ProxyJump hosts. */
    if (r == FERRY_ERR_AUTH && so.rsa_only) {
        output_note(&rn->out, "%s: RSA keys are left to try, which this "
            "SSH library signs only with SHA-1: running it through ssh",
            rn->cli->remote.host);
        rn->use_cmd = rn->env.use_cmd = rn->rsa_fallback = 1;
        rn->ssh_login_next = 1;
        msg[0] = '\0';
        return 0;
    }
    return r;
}

void
run_ssh_close(struct run *rn)
{
    ssh_early_free(rn->early);
    rn->early = rn->env.early = NULL;
    if (rn->ssh == NULL)
        return;
    rn->wire_out += ssh_conn_wire_out(rn->ssh);
    rn->wire_in += ssh_conn_wire_in(rn->ssh);
    ssh_conn_close(rn->ssh);
    rn->ssh = NULL;
}
