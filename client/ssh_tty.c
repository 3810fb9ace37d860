/*
 * ssh_tty.c: prompts on the controlling terminal, as ssh asks them.
 *
 * The terminal keeps ISIG, so Ctrl-C still sends SIGINT; the line is read
 * with poll() on the terminal and the interrupt pipe, so the handler's
 * ssh_interrupt() ends the prompt at once (a plain read() would be
 * restarted after the handler and take the next line typed). The kernel
 * drops what was typed before the ^C.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include "digest.h"
#include "ssh_int.h"

/* A prompt starts on a clean line: the progress line may be there. */
#define SSH_TTY_CLEAR "\r\033[K"

/* What the prompts of this process waited on the user, in ms: a login's
 * time less this is what the link and the server took. */
static _Atomic uint64_t ssh_tty_waited;

uint64_t
ssh_tty_waited_ms(void)
{
    return atomic_load(&ssh_tty_waited);
}

static void
ssh_tty_puts(int fd, const char *s)
{
    size_t n = strlen(s);
    ssize_t w;

    while (n > 0) {
        w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/*
 * Reads one line (without its newline) into out. Returns its length,
 * FERRY_ERR_CLOSED at end of input, FERRY_ERR_TOO_LARGE for a line that
 * does not fit (the rest of it is read and dropped), FERRY_ERR_INTERRUPTED
 * or -errno.
 */
static int
ssh_tty_line(int fd, char *out, size_t outlen)
{
    struct pollfd p[2];
    size_t n = 0;
    int too_long = 0;
    char ch;
    ssize_t got;

    for (;;) {
        if (ssh_interrupted())
            return FERRY_ERR_INTERRUPTED;
        p[0].fd = fd;
        p[0].events = POLLIN;
        p[1].fd = ssh_intr_fd();
        p[1].events = POLLIN;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (p[0].revents == 0)
            continue;
        /* One byte at a time: a line is short, and nothing after its
         * newline may be taken from the terminal. */
        got = read(fd, &ch, 1);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            return n > 0 && !too_long ? (int)n : FERRY_ERR_CLOSED;
        if (ch == '\n')
            break;
        if (n + 1 < outlen)
            out[n++] = ch;
        else
            too_long = 1;
        out[n] = '\0';
    }
    out[n] = '\0';
    if (n > 0 && out[n - 1] == '\r')
        out[--n] = '\0';
    return too_long ? FERRY_ERR_TOO_LARGE : (int)n;
}

static int
ssh_tty_open(void)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);

    return fd < 0 ? -errno : fd;
}

/* A line the user typed, the time it took counted as waited. */
static int
ssh_tty_answer(int fd, char *out, size_t outlen)
{
    int64_t t0 = ssh_now_ms();
    int r = ssh_tty_line(fd, out, outlen);

    atomic_fetch_add(&ssh_tty_waited, (uint64_t)(ssh_now_ms() - t0));
    return r;
}

int
ssh_tty_confirm(const char *question, const char *fingerprint)
{
    char line[128], *p, *end;
    int fd, r;

    if ((fd = ssh_tty_open()) < 0)
        return fd;
    ssh_tty_puts(fd, SSH_TTY_CLEAR);
    ssh_tty_puts(fd, question);
    for (;;) {
        r = ssh_tty_answer(fd, line, sizeof(line));
        if (r == FERRY_ERR_INTERRUPTED || r == FERRY_ERR_CLOSED ||
            (r < 0 && r != FERRY_ERR_TOO_LARGE))
            break;
        p = line + strspn(line, " \t");
        end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (r >= 0 && strcasecmp(p, "no") == 0) {
            r = 0;
            break;
        }
        if (r >= 0 && (strcasecmp(p, "yes") == 0 ||
            strcmp(p, fingerprint) == 0)) {
            r = 1;
            break;
        }
        ssh_tty_puts(fd, "Please type 'yes', 'no' or the fingerprint: ");
    }
    if (r == FERRY_ERR_INTERRUPTED || r == FERRY_ERR_CLOSED)
        ssh_tty_puts(fd, "\n");
    close(fd);
    return r == FERRY_ERR_CLOSED ? 0 : r;
}

int
ssh_tty_secret(const char *prompt, char *out, size_t outlen)
{
    struct termios old, quiet;
    int fd, r, restore = 0;

    out[0] = '\0';
    if ((fd = ssh_tty_open()) < 0)
        return fd;
    ssh_tty_puts(fd, SSH_TTY_CLEAR);
    ssh_tty_puts(fd, prompt);
    if (tcgetattr(fd, &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
        restore = tcsetattr(fd, TCSANOW, &quiet) == 0;
    }
    r = ssh_tty_answer(fd, out, outlen);
    if (restore)
        (void)tcsetattr(fd, TCSANOW, &old);
    ssh_tty_puts(fd, "\n");
    close(fd);
    if (r < 0) {
        digest_cleanse(out, outlen);
        out[0] = '\0';
        return r;
    }
    return 0;
}
