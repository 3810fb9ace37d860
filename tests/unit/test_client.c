/* Tests for the client's pure parsers: remote locations (client/cli.c),
 * `ssh -G` output (client/sshcfg.c), shell quoting (client/ssh.c) and
 * private key files (client/ssh_auth.c). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../client/cli.h"
#include "../../client/digest.h"
#include "../../client/ssh.h"
#include "../../client/ssh_int.h"
#include "../../client/sshcfg.h"
#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "check.h"

TEST(client_parse_remote)
{
    struct remote r;

    CHECK_OK(cli_parse_remote("box:/data", &r));
    CHECK_EQ_STR(r.host, "box");
    CHECK(r.user == NULL);
    CHECK_EQ_STR(r.path, "/data");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("me@gpu.example:ckpt/x.pt", &r));
    CHECK_EQ_STR(r.user, "me");
    CHECK_EQ_STR(r.host, "gpu.example");
    CHECK_EQ_STR(r.path, "ckpt/x.pt");
    remote_cleanup(&r);

    /* "host:" is the remote home directory, as with scp. */
    CHECK_OK(cli_parse_remote("box:", &r));
    CHECK_EQ_STR(r.path, ".");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("u@[::1]:/w", &r));
    CHECK_EQ_STR(r.host, "::1");
    CHECK_EQ_STR(r.user, "u");
    CHECK_EQ_STR(r.path, "/w");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("local:/tmp/x", &r));
    CHECK(r.local);
    CHECK(r.host == NULL);
    CHECK_EQ_STR(r.path, "/tmp/x");
    remote_cleanup(&r);

    /* A colon after a slash, or none at all: a local path. */
    CHECK_EQ_ERR(cli_parse_remote("./a:b", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("dir/x:y", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("plain", &r), FERRY_ERR_USAGE);
    /* No host, or one that would read as an ssh option. */
    CHECK_EQ_ERR(cli_parse_remote(":path", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("-oProxyCommand=x:y", &r),
        FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("u@[::1/x", &r), FERRY_ERR_USAGE);
}

/* cli_parse explains a usage error on stderr; the expected ones are not
 * worth showing in the test output. */
static int
quiet_stderr(void)
{
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

    if (null >= 0) {
        dup2(null, STDERR_FILENO);
        close(null);
    }
    return saved;
}

static void
restore_stderr(int saved)
{
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
}

TEST(client_cli_rules)
{
    char *push[] = { "ferry", "push", "-z", "a", "b/", "box:/d", NULL };
    char *pull[] = { "ferry", "pull", "box:/a", "box:b", "out", NULL };
    char *mixed[] = { "ferry", "pull", "box:/a", "other:/b", "out", NULL };
    char *bad1[] = { "ferry", "push", "box:/a", "box:/b", NULL };
    char *bad2[] = { "ferry", "push", "a", "b", NULL };
    char *st[] = { "ferry", "status", "--retries", "3", "box:/d", NULL };
    char *stl[] = { "ferry", "clean", "./dest", NULL };
    struct cli c;
    int saved;

    CHECK_OK(cli_parse(&c, 6, push));
    CHECK_EQ_INT(c.cmd, CMD_PUSH);
    CHECK_EQ_INT(c.nlocal, 2);
    CHECK(c.compress);
    CHECK_EQ_STR(c.remote.host, "box");
    cli_cleanup(&c);

    CHECK_OK(cli_parse(&c, 5, pull));
    CHECK_EQ_INT(c.cmd, CMD_PULL);
    CHECK_EQ_INT(c.nremote, 2);
    CHECK_EQ_STR(c.remote_paths[1], "b");
    CHECK_EQ_STR(c.local_paths[0], "out");
    cli_cleanup(&c);

    /* All sources of a pull on one host; a push goes to a remote. */
    saved = quiet_stderr();
    CHECK_EQ_ERR(cli_parse(&c, 5, mixed), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse(&c, 4, bad1), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse(&c, 4, bad2), FERRY_ERR_USAGE);
    restore_stderr(saved);

    CHECK_OK(cli_parse(&c, 5, st));
    CHECK_EQ_INT(c.cmd, CMD_STATUS);
    CHECK(c.has_remote);
    CHECK_EQ_INT(c.retries, 3);
    cli_cleanup(&c);

    CHECK_OK(cli_parse(&c, 3, stl));
    CHECK_EQ_INT(c.cmd, CMD_CLEAN);
    CHECK(!c.has_remote);
    CHECK_EQ_STR(c.local_paths[0], "./dest");
    cli_cleanup(&c);
}

TEST(client_sshcfg_parse)
{
    static const char out[] =
        "user alice\n"
        "hostname 10.0.0.7\n"
        "port 2222\n"
        "identitiesonly yes\n"
        "stricthostkeychecking accept-new\n"
        "serveraliveinterval 5\n"
        "serveralivecountmax 4\n"
        "connecttimeout none\n"
        "identityfile ~/.ssh/id_ed25519\n"
        "identityfile /keys/box\r\n"
        "userknownhostsfile /kh/a /kh/b\n"
        "proxyjump none\n"
        "unknownkey whatever\n";
    static const char yes[] = "hostname h\nstricthostkeychecking true\n";
    static const char no[] = "hostname h\nstricthostkeychecking false\n"
        "proxyjump hop\n";
    static const char badport[] = "hostname h\nport 70000\n";
    struct sshcfg c;

    setenv("HOME", "/home/alice", 1);
    CHECK_OK(sshcfg_parse(out, sizeof(out) - 1, &c));
    CHECK_EQ_STR(c.user, "alice");
    CHECK_EQ_STR(c.hostname, "10.0.0.7");
    CHECK_EQ_INT(c.port, 2222);
    CHECK(c.identities_only);
    CHECK_EQ_INT(c.strict, STRICT_ACCEPT_NEW);
    CHECK_EQ_INT(c.alive_interval, 5);
    CHECK_EQ_INT(c.alive_count, 4);
    CHECK_EQ_INT(c.connect_timeout, 0);
    CHECK_EQ_U64(c.nidentity, 2);
    CHECK_EQ_STR(c.identity_files[0], "/home/alice/.ssh/id_ed25519");
    CHECK_EQ_STR(c.identity_files[1], "/keys/box");
    CHECK_EQ_U64(c.nknown, 2);
    CHECK_EQ_STR(c.known_hosts[1], "/kh/b");
    CHECK(c.proxy == NULL);
    sshcfg_cleanup(&c);

    /* ssh -G spells the yes/no of StrictHostKeyChecking true/false. */
    CHECK_OK(sshcfg_parse(yes, strlen(yes), &c));
    CHECK_EQ_INT(c.strict, STRICT_YES);
    CHECK_EQ_INT(c.port, 22);
    sshcfg_cleanup(&c);
    CHECK_OK(sshcfg_parse(no, strlen(no), &c));
    CHECK_EQ_INT(c.strict, STRICT_NO);
    CHECK_EQ_STR(c.proxy, "hop");
    sshcfg_cleanup(&c);

    /* No host name, or a port that is not one: not usable. */
    CHECK_EQ_ERR(sshcfg_parse("user x\n", 7, &c), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(sshcfg_parse(badport, strlen(badport), &c),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(sshcfg_parse("", 0, &c), FERRY_ERR_FORMAT);
}

TEST(client_shell_quote)
{
    char out[64];

    CHECK_OK(ssh_shell_quote("plain", out, sizeof(out)));
    CHECK_EQ_STR(out, "'plain'");
    CHECK_OK(ssh_shell_quote("it's $HOME; rm", out, sizeof(out)));
    CHECK_EQ_STR(out, "'it'\\''s $HOME; rm'");
    CHECK_OK(ssh_shell_quote("", out, sizeof(out)));
    CHECK_EQ_STR(out, "''");
    CHECK_EQ_ERR(ssh_shell_quote("0123456789", out, 8), FERRY_ERR_TOO_LARGE);
}

/* An OpenSSH private key container: magic, cipher, kdf, kdf options, one
 * public key of the given type, and a stand-in for the private part. */
static void
key_container(struct buf *b, const char *cipher, const char *type)
{
    struct buf pub;

    buf_init(&pub, 1024);
    CHECK_OK(buf_put_str32(&pub, type, strlen(type)));
    CHECK_OK(buf_put_str32(&pub, LIT("0123456789abcdef0123456789abcdef")));
    buf_init(b, 4096);
    CHECK_OK(buf_put(b, "openssh-key-v1", 15));
    CHECK_OK(buf_put_str32(b, cipher, strlen(cipher)));
    CHECK_OK(buf_put_str32(b, LIT("none")));
    CHECK_OK(buf_put_str32(b, LIT("")));
    CHECK_OK(buf_put_u32(b, 1));
    CHECK_OK(buf_put_str32(b, pub.data, pub.len));
    CHECK_OK(buf_put_str32(b, LIT("private part")));
    buf_cleanup(&pub);
}

/* The file text for n bytes of a container: PEM armour, 70 columns. */
static char *
key_text(const uint8_t *p, size_t n)
{
    static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    static const char end[] = "-----END OPENSSH PRIVATE KEY-----\n";
    char *b64 = xmalloc(n * 4 / 3 + 8), *text;
    size_t bl, i, o;

    CHECK(b64 != NULL);
    digest_base64(p, n, 0, b64);
    bl = strlen(b64);
    text = xmalloc(sizeof(begin) + bl + bl / 70 + 2 + sizeof(end));
    CHECK(text != NULL);
    o = (size_t)sprintf(text, "%s", begin);
    for (i = 0; i < bl; i++) {
        text[o++] = b64[i];
        if (i % 70 == 69 || i + 1 == bl)
            text[o++] = '\n';
    }
    o += (size_t)sprintf(text + o, "%s", end);
    xfree(b64);
    return text;
}

static int
kind_of(const uint8_t *p, size_t n, int *rsa, int *enc)
{
    char *text = key_text(p, n);
    int r = ssh_auth_key_kind(text, strlen(text), rsa, enc);

    xfree(text);
    return r;
}

TEST(client_key_kind)
{
    static const char pem_rsa[] = "-----BEGIN RSA PRIVATE KEY-----\n"
        "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n"
        "-----END RSA PRIVATE KEY-----\n";
    static const char pkcs8[] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        "AAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
    struct buf b;
    int rsa = 7, enc = 7;

    key_container(&b, "none", "ssh-ed25519");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 0);
    buf_cleanup(&b);
    key_container(&b, "aes256-ctr", "ssh-ed25519");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 1);
    buf_cleanup(&b);
    key_container(&b, "none", "ssh-rsa");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 1);
    CHECK_EQ_INT(enc, 0);
    buf_cleanup(&b);
    /* The PEM forms tell from their armour. */
    CHECK_OK(ssh_auth_key_kind(LIT(pem_rsa), &rsa, &enc));
    CHECK_EQ_INT(rsa, 1);
    CHECK_EQ_INT(enc, 1);
    CHECK_OK(ssh_auth_key_kind(LIT(pkcs8), &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 1);
    CHECK_OK(ssh_auth_key_kind(LIT("not a key at all"), &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 0);
}

/* Cut short, lied about and bit-flipped: an error or an answer, never a
 * read outside the bytes (ASan) and never a wrong success for a cut
 * before the public key ends. */
TEST(client_key_kind_hostile)
{
    struct buf b, h;
    size_t n, i, pub_end;
    int rsa, enc, r;
    char *text;

    key_container(&b, "none", "ssh-rsa");
    /* Everything up to the end of the public key is needed. */
    pub_end = b.len - 4 - strlen("private part");
    for (n = 0; n < b.len; n++) {
        check_note("cut at %zu", n);
        r = kind_of(b.data, n, &rsa, &enc);
        if (n < pub_end) {
            CHECK_FAILS(r);
            CHECK_EQ_INT(rsa, 0);
            CHECK_EQ_INT(enc, 0);
        } else {
            CHECK_OK(r);
            CHECK_EQ_INT(rsa, 1);
        }
    }
    /* The text cut anywhere before its END line. */
    text = key_text(b.data, b.len);
    for (n = 36; n < strlen(text) - 34; n++) {
        check_note("text cut at %zu", n);
        CHECK_FAILS(ssh_auth_key_kind(text, n, &rsa, &enc));
    }
    xfree(text);
    for (i = 0; i < b.len * 8; i++) {
        check_note("bit %zu flipped", i);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
        (void)kind_of(b.data, b.len, &rsa, &enc);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    check_note_clear();
    buf_cleanup(&b);

    /* Lengths at the limits: rejected as too large before the bytes are
     * looked for. */
    static const uint32_t lens[] = { 65, 0x7fffffffu, 0x80000000u,
        0xffffffffu };
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        buf_init(&h, 256);
        CHECK_OK(buf_put(&h, "openssh-key-v1", 15));
        CHECK_OK(buf_put_u32(&h, lens[i]));
        CHECK_OK(buf_put(&h, LIT("none")));
        CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc),
            FERRY_ERR_TOO_LARGE);
        buf_cleanup(&h);
    }
    /* No keys, a wrong magic, and text that is not base64. */
    buf_init(&h, 256);
    CHECK_OK(buf_put(&h, "openssh-key-v1", 15));
    CHECK_OK(buf_put_str32(&h, LIT("none")));
    CHECK_OK(buf_put_str32(&h, LIT("none")));
    CHECK_OK(buf_put_str32(&h, LIT("")));
    CHECK_OK(buf_put_u32(&h, 0));
    CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc), FERRY_ERR_FORMAT);
    h.data[0] = 'O';
    CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc), FERRY_ERR_FORMAT);
    buf_cleanup(&h);
    CHECK_EQ_ERR(ssh_auth_key_kind(LIT("-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3Blb*NzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n"), &rsa,
        &enc), FERRY_ERR_FORMAT);
}
