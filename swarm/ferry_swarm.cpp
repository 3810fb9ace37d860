// ferry-swarm: one box's member of a fan-out swarm (docs/SWARM.md).
//
// The agent starts it and drives it over a line protocol: commands on
// stdin, events on stdout, one per line. It loads a private v2 torrent
// that carries the transfer's CA (made by the client, client/torrent.c),
// listens on one address over SSL only, dials the peers it is given,
// takes the pieces the agent was sent, from files it names or inline on
// stdin after a `put` line (add_piece, which libtorrent hashes against
// the torrent's merkle tree before any peer sees them), fetches the rest
// from the other boxes and says when it holds every piece. Nothing is
// discovered: no tracker, DHT, LSD, PEX, UPnP or NAT-PMP. Peers are
// hostile until their certificate, signed by the transfer's CA, proves
// otherwise; libtorrent checks it in both directions. Lines from the
// agent are bounded and checked, and the files are written only beneath
// the save folder.
//
// C++ only because libtorrent is; the rest of ferry is C.

#include <libtorrent/add_torrent_params.hpp>
#include <libtorrent/alert_types.hpp>
#include <libtorrent/ip_filter.hpp>
#include <libtorrent/peer_info.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/session_params.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/torrent_status.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "swarm_line.h"

namespace lt = libtorrent;

namespace {

// Limits of the .torrent the helper loads: those of client/torrent.h, so
// that whatever the client can make, the helper takes, and no more.
constexpr int max_torrent_bytes = 80 * 1024 * 1024;
constexpr int max_torrent_pieces = 1 << 21;
constexpr int max_piece = 16 * 1024 * 1024;
// Pieces handed to libtorrent and not yet hashed: each is held in memory
// until then, so the agent's lines wait in the pipe beyond this many, or
// beyond this many bytes of them.
constexpr std::size_t max_pending = 32;
constexpr std::size_t max_pending_bytes = 64 * 1024 * 1024;
// How long a stop may take before the process ends itself: libtorrent's
// shutdown waits on sockets and disk threads, which a hostile peer or a
// stuck disk could hold.
constexpr unsigned stop_seconds = 10;
// A peer error is said once per distinct message, and at most this many.
constexpr std::size_t max_said = 64;
// Parts of bundles one helper is told of: the files of a transfer.
constexpr std::size_t max_parts = 1 << 22;
// Written (from libtorrent's thread) when alerts wait: wakes the loop.
int alert_pipe[2] = {-1, -1};

void emit(char const* fmt, ...) __attribute__((format(printf, 1, 2)));
void emit(char const* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stdout, fmt, ap);
    va_end(ap);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

// Text from libtorrent or a peer, made safe for one line.
std::string one_line(std::string s)
{
    if (s.size() > 200) s.resize(200);
    for (auto& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    return s;
}

std::string read_file(std::string const& path, std::size_t max, std::string& err)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = std::strerror(errno);
        return {};
    }
    std::string s;
    char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            err = std::strerror(errno);
            break;
        }
        if (n == 0) break;
        if (s.size() + std::size_t(n) > max) {
            err = "too large";
            break;
        }
        s.append(buf, std::size_t(n));
    }
    ::close(fd);
    return err.empty() ? s : std::string();
}

// The folder that holds rel (a path beneath save, '/' between its
// components), its folders made on the way, none through a symlink: a
// descriptor, and the last component in name; -1 and errno on failure.
int open_parent(std::string const& save, std::string const& rel, std::string& name)
{
    int dir = ::open(save.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    std::size_t at = 0, slash;
    while (dir >= 0 && (slash = rel.find('/', at)) != std::string::npos) {
        std::string const part = rel.substr(at, slash - at);
        int sub = -1;
        if (::mkdirat(dir, part.c_str(), 0700) == 0 || errno == EEXIST)
            sub = ::openat(dir, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int const e = errno;
        ::close(dir);
        errno = e;
        dir = sub;
        at = slash + 1;
    }
    name = rel.substr(at);
    return dir;
}

// len bytes of in from in_off to out at out_off; 0, or -1 and errno.
int copy_range(int in, std::int64_t in_off, int out, std::int64_t out_off, std::int64_t len)
{
    loff_t io = in_off, oo = out_off;
    while (len > 0) {
        ssize_t const n = ::copy_file_range(in, &io, out, &oo, std::size_t(len), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
            len -= n;
            continue;
        }
        if (n == 0) {
            errno = EIO;        // the source is shorter than it said
            return -1;
        }
        if (errno != ENOSYS && errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP)
            return -1;
        // A kernel or file system without it: through memory.
        char buf[65536];
        while (len > 0) {
            ssize_t const r = ::pread(in, buf, std::size_t(std::min<std::int64_t>(len, sizeof buf)), io);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                if (r == 0) errno = EIO;
                return -1;
            }
            for (ssize_t w = 0; w < r;) {
                ssize_t const k = ::pwrite(out, buf + w, std::size_t(r - w), oo + w);
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) return -1;
                w += k;
            }
            io += r;
            oo += r;
            len -= r;
        }
    }
    return 0;
}

// A new file at rel beneath save made of the given ranges of other
// files (src_off, len, path of the source, dst_off): written under a
// temporary name and renamed over rel, so that a name the box's
// transfer may have linked elsewhere is never written through. 0, or
// an error's text.
struct piece_of {
    std::int64_t src_off, len, dst_off;
    std::string const* path;    // absolute, or beneath save
};
std::string make_file(std::string const& save, std::string const& rel,
    std::vector<piece_of> const& from)
{
    std::string name;
    int const dir = open_parent(save, rel, name);
    if (dir < 0) return std::strerror(errno);
    std::string const tmp = ".ferry-part." + std::to_string(::getpid());
    ::unlinkat(dir, tmp.c_str(), 0);
    int const out = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    std::string err;
    if (out < 0) err = std::strerror(errno);
    for (std::size_t i = 0; err.empty() && i < from.size(); ++i) {
        piece_of const& f = from[i];
        int const in = f.path->size() > 0 && (*f.path)[0] == '/'
            ? ::open(f.path->c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            : ::openat(AT_FDCWD, (save + "/" + *f.path).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0 || copy_range(in, f.src_off, out, f.dst_off, f.len) != 0)
            err = one_line(*f.path) + ": " + std::strerror(errno);
        if (in >= 0) ::close(in);
    }
    if (out >= 0 && ::close(out) != 0 && err.empty()) err = std::strerror(errno);
    if (err.empty() && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) err = std::strerror(errno);
    if (!err.empty()) ::unlinkat(dir, tmp.c_str(), 0);
    ::close(dir);
    return err;
}

struct helper {
    // set before start
    std::shared_ptr<lt::torrent_info> ti;
    std::string cert, key, save, listen_ip;
    int listen_port = -1;
    // running
    std::unique_ptr<lt::session> ses;
    lt::torrent_handle h;
    std::vector<lt::tcp::endpoint> peers;
    std::vector<char> fed;          // pieces handed over by add_piece
    std::size_t pending = 0;        // of those, not yet hashed
    std::size_t pending_max = 1;    // how many may be: set at start
    lt::ip_filter filter;           // only the peers given may connect
    std::size_t allowed = 0;        // addresses given by allow
    std::set<std::string> said;
    // The piece a `put` is filling: its bytes come after the line, and
    // the rest of the piece (past the file's end) stays zeros.
    std::vector<char> put_buf;
    int put_piece = -1;
    std::size_t put_len = 0, put_got = 0;
    bool done = false, stopping = false, unframed = false;
    long long last_dial = 0, last_progress = 0;
    std::string last_line;

    bool started() const { return ses != nullptr; }
    bool room() const { return !started() || pending < pending_max; }

    void cmd(swarm_line const& l);
    void start();
    void feed(int piece, std::int64_t offset, std::string const& path);
    void put(int piece, std::int64_t len);
    void put_bytes(swarm_reader& rd);
    void hand(int piece, std::vector<char> buf);
    void link_file(int first, std::string const& path);
    void say_holds();
    std::vector<lt::file_index_t> linked;  // served from where they are
    // The file whose first piece is the key, made when the torrent is
    // loaded: a box told of thousands of files it holds looks each up
    // once.
    std::map<int, lt::file_index_t> first_piece;
    std::set<std::string> members;  // the torrent's files' paths
    // Bundles: torrent files that are small files end to end (a torrent
    // of thousands of files is slow, docs/SWARM.md). `part` says which
    // bytes make which file, written once the bundle is whole; `from`
    // says which of the box's files hold them, so that a bundle the box
    // holds in its destination is made before start, not fetched.
    struct part {
        std::int64_t off, len;
        std::string path;
    };
    struct bundle {
        lt::file_index_t file{};
        std::vector<part> parts, from;
        int left = -1;                  // pieces not held; -1: unknown
        // its parts: waiting for its pieces, ready to write, waiting
        // for the flush asked when it was ready, written
        enum { waiting, ready, flushing, made } st = waiting;
    };
    std::map<int, bundle> bundles;      // by first piece
    std::size_t nparts = 0;
    std::vector<char> held;             // pieces counted in a bundle's left
    bool flushing = false;              // flush_cache asked, no answer yet
    void add_part(swarm_line const& l, std::string const& arg);
    void make_bundles();
    void count_piece(int p);
    void bundle_ready();
    void make_parts();
    bool parts_pending() const;
    void lost_framing(char const* why);
    void alerts();
    void tick(long long now);
};

long long now_ms()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// A torrent the helper may run: v2 only, private, with a CA, and no file
// that could make libtorrent write outside the save folder (a symlink,
// an absolute path or a "..").
std::string torrent_refusal(lt::torrent_info const& ti)
{
    if (!ti.info_hashes().has_v2() || ti.info_hashes().has_v1()) return "not a v2-only torrent";
    if (!ti.priv()) return "not private";
    if (ti.ssl_cert().empty()) return "no ssl-cert: the swarm runs over SSL only";
    // A piece is held in memory while it waits for its hash (feed()).
    if (ti.piece_length() > max_piece) return "pieces over 16 MiB";
    lt::file_storage const& fs = ti.files();
    for (lt::file_index_t i : fs.file_range()) {
        if (fs.file_flags(i) & lt::file_storage::flag_symlink) return "holds a symlink";
        std::string const p = fs.file_path(i);
        if (!swarm_path_ok(p.c_str())) return "unsafe path " + one_line(p);
    }
    return {};
}

void helper::cmd(swarm_line const& l)
{
    std::string const arg(l.arg, l.arg_len);
    switch (l.cmd) {
    case SWARM_TORRENT: {
        if (started() || ti) return emit("error torrent: already given");
        std::string err;
        std::string const buf = read_file(arg, max_torrent_bytes, err);
        if (!err.empty()) return emit("error torrent: %s", err.c_str());
        lt::load_torrent_limits lim;
        lim.max_buffer_size = max_torrent_bytes;
        lim.max_pieces = max_torrent_pieces;
        std::shared_ptr<lt::torrent_info> t;
        try {
            t = std::make_shared<lt::torrent_info>(lt::span<char const>(buf), lim, lt::from_span);
        } catch (std::exception const& e) {
            return emit("error torrent: %s", one_line(e.what()).c_str());
        }
        std::string const why = torrent_refusal(*t);
        if (!why.empty()) return emit("error torrent: %s", why.c_str());
        ti = t;
        {
            lt::file_storage const& fs = ti->files();
            for (lt::file_index_t i : fs.file_range()) {
                if (fs.pad_file_at(i)) continue;
                members.insert(fs.file_path(i));
                if (fs.file_size(i) > 0)
                    first_piece.emplace(static_cast<int>(fs.map_file(i, 0, 1).piece), i);
            }
        }
        emit("torrent %s %d %d", one_line(ti->name()).c_str(), ti->num_pieces(), ti->piece_length());
        return;
    }
    case SWARM_CERT:
    case SWARM_KEY: {
        if (started()) return emit("error %s: after start", l.cmd == SWARM_CERT ? "cert" : "key");
        std::string err;
        std::string const pem = read_file(arg, 64 * 1024, err);
        if (!err.empty())
            return emit("error %s: %s", l.cmd == SWARM_CERT ? "cert" : "key", err.c_str());
        (l.cmd == SWARM_CERT ? cert : key) = pem;
        return;
    }
    case SWARM_SAVE: {
        if (started()) return emit("error save: after start");
        struct stat st;
        if (::lstat(arg.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return emit("error save: not a folder");
        save = arg;
        return;
    }
    case SWARM_LISTEN:
        if (started()) return emit("error listen: after start");
        listen_ip = std::string(l.ip);
        listen_port = l.port;
        return;
    case SWARM_START:
        return start();
    case SWARM_PEER: {
        if (!started()) return emit("error peer: before start");
        lt::error_code ec;
        lt::address const a = lt::make_address(l.ip, ec);
        if (ec) return emit("error peer: bad address");
        if (peers.size() >= SWARM_MAX_PEERS) return emit("error peer: too many");
        peers.emplace_back(a, static_cast<unsigned short>(l.port));
        filter.add_rule(a, a, 0);
        ses->set_ip_filter(filter);
        last_dial = 0;
        return;
    }
    case SWARM_ALLOW: {
        if (!started()) return emit("error allow: before start");
        lt::error_code ec;
        lt::address const a = lt::make_address(l.ip, ec);
        if (ec) return emit("error allow: bad address");
        if (allowed >= SWARM_MAX_PEERS) return emit("error allow: too many");
        ++allowed;
        filter.add_rule(a, a, 0);
        ses->set_ip_filter(filter);
        return;
    }
    case SWARM_PIECE:
        if (!started()) return emit("error piece: before start");
        return feed(int(l.piece), l.offset, arg);
    case SWARM_PUT:
        return put(int(l.piece), l.len);
    case SWARM_LINK:
        if (started()) return emit("error link: after start");
        if (!ti || save.empty()) return emit("error link: before torrent and save");
        return link_file(int(l.piece), arg);
    case SWARM_PART:
    case SWARM_FROM:
        return add_part(l, arg);
    case SWARM_LIMIT: {
        if (!started()) return emit("error limit: before start");
        lt::settings_pack sp;
        sp.set_int(lt::settings_pack::upload_rate_limit, int(l.up));
        sp.set_int(lt::settings_pack::download_rate_limit, int(l.down));
        ses->apply_settings(std::move(sp));
        return;
    }
    case SWARM_STOP:
        stopping = true;
        return;
    }
}

void helper::start()
{
    if (started()) return emit("error start: already started");
    if (!ti) return emit("error start: no torrent");
    if (save.empty()) return emit("error start: no save folder");
    if (listen_port < 0) return emit("error start: no listen address");
    if (cert.empty() || key.empty()) return emit("error start: no cert or key");
    // What libtorrent will create first must not already be a link out.
    struct stat st;
    std::string const top = save + "/" + ti->name();
    if (::lstat(top.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
        return emit("error start: %s is a symlink", one_line(ti->name()).c_str());

    lt::settings_pack sp;
    bool const v6 = listen_ip.find(':') != std::string::npos;
    std::string const host = v6 ? "[" + listen_ip + "]" : listen_ip;
    // One SSL socket on this box's address: no plain BitTorrent port.
    sp.set_str(lt::settings_pack::listen_interfaces, host + ":" + std::to_string(listen_port) + "s");
    sp.set_str(lt::settings_pack::outgoing_interfaces, listen_ip);
    sp.set_bool(lt::settings_pack::enable_dht, false);
    sp.set_bool(lt::settings_pack::enable_lsd, false);
    sp.set_bool(lt::settings_pack::enable_upnp, false);
    sp.set_bool(lt::settings_pack::enable_natpmp, false);
    sp.set_bool(lt::settings_pack::enable_incoming_utp, false);
    sp.set_bool(lt::settings_pack::enable_outgoing_utp, false);
    sp.set_int(lt::settings_pack::min_reconnect_time, 1);
    sp.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, true);
    sp.set_int(lt::settings_pack::alert_mask,
        lt::alert_category::error | lt::alert_category::status | lt::alert_category::peer
            | lt::alert_category::connect | lt::alert_category::piece_progress
            | lt::alert_category::storage);
    lt::session_params params(sp);
    // No plugins: ut_pex and ut_metadata must not run, and smart_ban is
    // not needed, since v2 hashes name the bad block's peer directly.
    params.extensions.clear();
    try {
        ses = std::make_unique<lt::session>(std::move(params));
    } catch (std::exception const& e) {
        emit("fatal session: %s", one_line(e.what()).c_str());
        std::exit(1);
    }
    ses->set_alert_notify([] {
        char const c = 1;
        ssize_t const w = ::write(alert_pipe[1], &c, 1);
        (void)w;
    });
    // Rate limits apply to every peer: libtorrent's default filter puts
    // private and loopback addresses, where boxes of one cloud meet, in a
    // "local" class that no limit reaches.
    lt::ip_filter f;
    f.add_rule(lt::make_address("0.0.0.0"), lt::make_address("255.255.255.255"),
        1u << static_cast<std::uint32_t>(lt::session::global_peer_class_id));
    f.add_rule(lt::make_address("::"), lt::make_address("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        1u << static_cast<std::uint32_t>(lt::session::global_peer_class_id));
    ses->set_peer_class_filter(f);
    // Connections from addresses other than the peers given are dropped
    // before TLS: the certificate is the proof, this saves the handshake
    // and keeps strangers on the network from holding sockets.
    filter.add_rule(lt::make_address("0.0.0.0"), lt::make_address("255.255.255.255"),
        lt::ip_filter::blocked);
    filter.add_rule(lt::make_address("::"),
        lt::make_address("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), lt::ip_filter::blocked);
    ses->set_ip_filter(filter);

    make_bundles();
    held.assign(std::size_t(ti->num_pieces()), 0);
    lt::add_torrent_params atp;
    atp.ti = ti;
    atp.save_path = save;
    // What is linked is served, never fetched, so never written: it is a
    // file of the destination itself (link_file).
    if (!linked.empty()) {
        atp.file_priorities.assign(std::size_t(ti->files().num_files()), lt::default_priority);
        for (auto li : linked) atp.file_priorities[std::size_t(static_cast<int>(li))] = lt::dont_download;
    }
    atp.flags &= ~lt::torrent_flags::auto_managed;
    atp.flags &= ~lt::torrent_flags::paused;
    lt::error_code ec;
    h = ses->add_torrent(std::move(atp), ec);
    if (ec) {
        emit("fatal add_torrent: %s", one_line(ec.message()).c_str());
        std::exit(1);
    }
    // No DH parameters: TLS 1.3 and ECDHE need none. libtorrent says so
    // with a torrent_error_alert, which alerts() passes over.
    h.set_ssl_certificate_buffer(cert, key, std::string());
    // The key is not needed again in this process.
    std::fill(key.begin(), key.end(), '\0');
    key.clear();
    fed.assign(std::size_t(ti->num_pieces()), 0);
    pending_max = std::max<std::size_t>(1,
        std::min(max_pending, max_pending_bytes / std::size_t(ti->piece_length())));
    emit("started");
}

// The agent has the bytes of piece p in path, from offset on (a file it
// wrote or received). The piece's length comes from the torrent; a v2
// piece never spans files, so the bytes are one range of one file, and
// the rest of a file's last piece is zeros.
void helper::feed(int p, std::int64_t offset, std::string const& path)
{
    if (p < 0 || p >= ti->num_pieces()) return emit("error piece: no piece %d", p);
    lt::piece_index_t const pi(p);
    lt::file_storage const& fs = ti->files();
    int const len = fs.piece_size2(pi);
    std::vector<char> buf(std::size_t(fs.piece_size(pi)), 0);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return emit("error piece %d: %s", p, std::strerror(errno));
    std::size_t got = 0;
    while (got < std::size_t(len)) {
        ssize_t n = ::pread(fd, buf.data() + got, std::size_t(len) - got, offset + off_t(got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += std::size_t(n);
    }
    ::close(fd);
    if (got != std::size_t(len)) return emit("error piece %d: short read", p);
    hand(p, std::move(buf));
}

// A piece's bytes, whole and padded, to libtorrent, which hashes them
// before any peer may have them; alerts() says how that went.
void helper::hand(int p, std::vector<char> buf)
{
    lt::piece_index_t const pi(p);
    if (h.have_piece(pi)) return emit("fed %d", p);
    if (!fed[std::size_t(p)]) {
        fed[std::size_t(p)] = 1;
        ++pending;
    }
    h.add_piece(pi, std::move(buf), lt::torrent_handle::overwrite_existing);
}

// The bytes after a refused put header cannot be told from lines: the
// helper ends rather than guess (main() shuts the session down).
void helper::lost_framing(char const* why)
{
    emit("error %s", why);
    emit("fatal put: the input after a refused put cannot be framed");
    unframed = true;
    stopping = true;
}

// `put INDEX LEN`: the agent streams piece INDEX's bytes after the line.
// LEN must be what the torrent says the piece holds (a v2 piece lies in
// one file, so at most up to that file's end): a driver that disagrees
// has another torrent in mind, and its bytes would not hash anyway.
void helper::put(int p, std::int64_t len)
{
    char why[128];
    if (!started()) return lost_framing("put: before start");
    if (p < 0 || p >= ti->num_pieces()) {
        std::snprintf(why, sizeof why, "put: no piece %d", p);
        return lost_framing(why);
    }
    lt::piece_index_t const pi(p);
    int const want = ti->files().piece_size2(pi);
    if (len != want) {
        std::snprintf(why, sizeof why, "put %d: %lld bytes, the piece holds %d", p,
            (long long)len, want);
        return lost_framing(why);
    }
    put_buf.assign(std::size_t(ti->files().piece_size(pi)), 0);
    put_piece = p;
    put_len = std::size_t(len);
    put_got = 0;
}

// Takes what the reader holds of the current put's payload, and hands
// the piece over once it is whole.
void helper::put_bytes(swarm_reader& rd)
{
    // The reader owes a payload only after a put line, and put() either
    // took it or ended the helper; should that ever not hold, end rather
    // than spin on bytes nobody takes.
    if (put_piece < 0) return lost_framing("put: bytes without a piece");
    // swarm_reader_take never gives more than put_len - put_got: the
    // reader owes exactly the LEN that put() checked.
    put_got += swarm_reader_take(&rd, put_buf.data() + put_got, put_len - put_got);
    if (put_got < put_len) return;
    int const p = put_piece;
    put_piece = -1;
    hand(p, std::move(put_buf));
    put_buf = std::vector<char>();
}

void helper::alerts()
{
    std::vector<lt::alert*> as;
    ses->pop_alerts(&as);
    for (lt::alert* a : as) {
        if (auto* pf = lt::alert_cast<lt::piece_finished_alert>(a)) {
            int const p = static_cast<int>(pf->piece_index);
            if (fed[std::size_t(p)] == 1) {
                fed[std::size_t(p)] = 2;
                --pending;
                emit("fed %d", p);
            }
            count_piece(p);
        } else if (lt::alert_cast<lt::cache_flushed_alert>(a)) {
            if (flushing) make_parts();
        } else if (auto* hf = lt::alert_cast<lt::hash_failed_alert>(a)) {
            int const p = static_cast<int>(hf->piece_index);
            if (fed[std::size_t(p)] == 1) {
                // The agent's bytes do not match the client's torrent.
                fed[std::size_t(p)] = 0;
                --pending;
                emit("bad %d", p);
            }
        } else if (auto* pb = lt::alert_cast<lt::peer_ban_alert>(a)) {
            // A peer sent a block that did not match the client's tree
            // (v2 names the block, and so its sender): libtorrent drops
            // the block and bans the peer for this session.
            std::string const m = pb->endpoint.address().to_string();
            if (said.size() < max_said && said.insert("ban " + m).second)
                emit("banned %s", m.c_str());
        } else if (lt::alert_cast<lt::torrent_checked_alert>(a)) {
            // What the save folder already held: a restarted box resumes.
            emit("checked %d", h.status().num_pieces);
            say_holds();
            lt::torrent_status const st = h.status(lt::torrent_handle::query_pieces);
            for (int p = 0; p < ti->num_pieces(); ++p)
                if (st.pieces.get_bit(lt::piece_index_t(p))) count_piece(p);
        } else if (auto* ls = lt::alert_cast<lt::listen_succeeded_alert>(a)) {
            if (ls->socket_type == lt::socket_type_t::tcp_ssl)
                emit("listening %s %d", ls->address.to_string().c_str(), ls->port);
        } else if (auto* lf = lt::alert_cast<lt::listen_failed_alert>(a)) {
            emit("fatal listen: %s", one_line(lf->error.message()).c_str());
            std::exit(1);
        } else if (auto* pe = lt::alert_cast<lt::peer_error_alert>(a)) {
            std::string const m = pe->endpoint.address().to_string() + " "
                + lt::operation_name(pe->op) + ": " + one_line(pe->error.message());
            if (said.size() < max_said && said.insert(m).second) emit("peer-error %s", m.c_str());
        } else if (auto* fe = lt::alert_cast<lt::file_error_alert>(a)) {
            emit("fatal file %s: %s", one_line(fe->filename()).c_str(),
                one_line(fe->error.message()).c_str());
            std::exit(1);
        }
    }
}

void helper::tick(long long now)
{
    // Peers are dialled again each second until connected: the other
    // box may not be listening yet, or may have been restarted.
    if (now - last_dial >= 1000) {
        last_dial = now;
        std::vector<lt::peer_info> pi;
        h.get_peer_info(pi);
        for (auto const& ep : peers) {
            bool have = false;
            for (auto const& p : pi)
                if (p.ip == ep) have = true;
            if (!have) h.connect_peer(ep);
        }
    }
    if (now - last_progress >= 250) {
        last_progress = now;
        lt::torrent_status const st = h.status();
        char line[200];
        std::snprintf(line, sizeof line, "progress %d %d %d %lld %lld", st.num_pieces,
            ti->num_pieces(), st.num_peers, (long long)st.all_time_upload,
            (long long)st.all_time_download);
        if (line != last_line) {
            last_line = line;
            emit("%s", line);
        }
        // Whole: every piece it is to fetch (what it serves from links,
        // it does not).
        bool const whole = (st.is_finished || st.num_pieces == ti->num_pieces())
            && st.state != lt::torrent_status::checking_files
            && st.state != lt::torrent_status::checking_resume_data;
        if (whole && !done && !parts_pending()) {
            done = true;
            emit("done");
        }
    }
}

// The file whose first piece is `first` is the file at path, a regular
// file of the box's destination that already holds its content: it is
// hard-linked into the save folder, so that this box serves it without a
// copy, and marked not to fetch, so that libtorrent never writes it
// (its pieces that fail the check are simply not held). The folders
// below the save folder are made here, none through a symlink.
void helper::link_file(int first, std::string const& path)
{
    lt::file_storage const& fs = ti->files();
    auto const found = first_piece.find(first);
    if (found == first_piece.end()) return emit("error link: no file starts at piece %d", first);
    lt::file_index_t const file = found->second;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != fs.file_size(file))
        return emit("error link %d: not a regular file of its size", first);
    std::string name;
    int const dir = open_parent(save, fs.file_path(file), name);
    if (dir < 0) return emit("error link %d: %s", first, std::strerror(errno));
    struct stat old;
    // A part of it from an earlier run gives way to the whole.
    if (::fstatat(dir, name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(old.st_mode))
        ::unlinkat(dir, name.c_str(), 0);
    int const r = ::linkat(AT_FDCWD, path.c_str(), dir, name.c_str(), 0);
    int const e = errno;
    ::close(dir);
    if (r != 0) return emit("error link %d: %s", first, std::strerror(e));
    linked.push_back(file);
}

// What the box holds after its check, as runs of pieces, so that the
// client sends none of them: `holds FIRST COUNT`..., `holds-end`.
void helper::say_holds()
{
    lt::torrent_status const st = h.status(lt::torrent_handle::query_pieces);
    int const n = ti->num_pieces();
    int run = -1;
    for (int p = 0; p <= n; ++p) {
        bool const have = p < n && st.pieces.get_bit(lt::piece_index_t(p));
        if (have && run < 0) run = p;
        if (!have && run >= 0) {
            emit("holds %d %d", run, p - run);
            run = -1;
        }
    }
    emit("holds-end");
}

// `part` and `from`: which bytes of a bundle make which file, and which
// of the box's files hold them.
void helper::add_part(swarm_line const& l, std::string const& arg)
{
    char const* what = l.cmd == SWARM_PART ? "part" : "from";
    if (started()) return emit("error %s: after start", what);
    if (!ti || save.empty()) return emit("error %s: before torrent and save", what);
    auto const found = first_piece.find(int(l.piece));
    if (found == first_piece.end()) return emit("error %s: no file starts at piece %d", what, int(l.piece));
    lt::file_storage const& fs = ti->files();
    if (l.offset + l.len > fs.file_size(found->second))
        return emit("error %s %d: past the end of its bundle", what, int(l.piece));
    if (nparts >= max_parts) return emit("error %s: too many", what);
    if (l.cmd == SWARM_PART) {
        if (!swarm_path_ok(arg.c_str())) return emit("error part %d: unsafe path", int(l.piece));
        // A part must not be written over a file libtorrent keeps.
        if (members.count(ti->name() + "/" + arg))
            return emit("error part %d: a file of the torrent", int(l.piece));
    } else if (arg[0] != '/') {
        return emit("error from %d: not an absolute path", int(l.piece));
    }
    bundle& b = bundles[found->first];
    if (b.left < 0) {
        b.file = found->second;
        b.left = fs.file_num_pieces(b.file);
    }
    (l.cmd == SWARM_PART ? b.parts : b.from).push_back(part{l.offset, l.len, arg});
    ++nparts;
}

// Before start: each bundle whose every byte a `from` names is made from
// the box's files (libtorrent's check then finds it whole, so none of it
// is fetched); one that cannot be is fetched instead.
void helper::make_bundles()
{
    lt::file_storage const& fs = ti->files();
    for (auto& [first, b] : bundles) {
        if (b.from.empty()) continue;
        std::sort(b.from.begin(), b.from.end(),
            [](part const& x, part const& y) { return x.off < y.off; });
        std::vector<piece_of> pieces;
        std::int64_t at = 0;
        for (part const& f : b.from) {
            if (f.off != at) break;
            pieces.push_back(piece_of{0, f.len, f.off, &f.path});
            at += f.len;
        }
        if (at != fs.file_size(b.file)) continue;
        std::string const err = make_file(save, fs.file_path(b.file), pieces);
        if (!err.empty()) emit("error from %d: %s", first, err.c_str());
    }
}

// Piece p is held (checked, fetched or fed): counted once in its
// bundle, and a bundle whole with parts to write gets them written.
void helper::count_piece(int p)
{
    if (held[std::size_t(p)]) return;
    held[std::size_t(p)] = 1;
    auto it = bundles.upper_bound(p);
    if (it == bundles.begin()) return;
    --it;
    bundle& b = it->second;
    if (p >= it->first + ti->files().file_num_pieces(b.file)) return;
    if (--b.left == 0 && !b.parts.empty() && b.st == bundle::waiting) {
        b.st = bundle::ready;
        bundle_ready();
    }
}

// Bundles ready wait for a flush of libtorrent's writes (a piece passes
// its hash before its bytes need be in the file), asked once at a time;
// those ready meanwhile wait for the next.
void helper::bundle_ready()
{
    if (flushing) return;
    bool any = false;
    for (auto& [first, b] : bundles)
        if (b.st == bundle::ready) {
            b.st = bundle::flushing;
            any = true;
        }
    if (!any) return;
    flushing = true;
    h.flush_cache();
}

// The flush asked is done: the parts of the bundles it covered are
// written, each as a new file. A part that cannot be (a full disk) ends
// the helper: the box's transfer then sends what it lacks.
void helper::make_parts()
{
    lt::file_storage const& fs = ti->files();
    flushing = false;
    for (auto& [first, b] : bundles) {
        if (b.st != bundle::flushing) continue;
        std::string const src = fs.file_path(b.file);
        for (part const& pt : b.parts) {
            std::string const err = make_file(save, ti->name() + "/" + pt.path,
                {piece_of{pt.off, pt.len, 0, &src}});
            if (!err.empty()) {
                emit("fatal part %s: %s", one_line(pt.path).c_str(), err.c_str());
                std::exit(1);
            }
        }
        b.st = bundle::made;
    }
    bundle_ready();
}

bool helper::parts_pending() const
{
    for (auto const& [first, b] : bundles)
        if (!b.parts.empty() && b.st != bundle::made) return true;
    return false;
}

// Ends the process if a stop takes longer than stop_seconds.
void on_alarm(int)
{
    static char const msg[] = "stopped timeout\n";
    ssize_t r = ::write(1, msg, sizeof msg - 1);
    (void)r;
    _exit(2);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 1) {
        std::fprintf(stderr, "usage: %s (commands on stdin; see docs/SWARM.md)\n", argv[0]);
        return 64;
    }
    std::signal(SIGPIPE, SIG_IGN);
    int const fl = ::fcntl(0, F_GETFL);
    ::fcntl(0, F_SETFL, fl | O_NONBLOCK);

    if (::pipe2(alert_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        std::fprintf(stderr, "ferry-swarm: pipe: %s\n", std::strerror(errno));
        return 1;
    }
    helper hp;
    swarm_reader rd;
    swarm_reader_init(&rd);
    bool eof = false;
    // 2: `put` exists; a driver must not send one to a helper of 1, which
    // would read its bytes as lines.
    emit("hello 2");
    while (!hp.stopping) {
        // Read lines only while fewer than max_pending pieces wait for
        // their hash: the pipe holds the rest back.
        std::size_t const room = hp.room() ? swarm_reader_room(&rd) : 0;
        // Woken by input, or by libtorrent's alerts (a piece hashed is
        // answered at once, not at the next tick); the timeout paces the
        // ticks.
        struct pollfd pfd[2] = {{room > 0 && !eof ? 0 : -1, POLLIN, 0},
            {alert_pipe[0], POLLIN, 0}};
        int const n = ::poll(pfd, 2, 100);
        if (n > 0 && (pfd[1].revents & POLLIN)) {
            char drain[256];
            while (::read(alert_pipe[0], drain, sizeof drain) > 0) {}
        }
        if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP))) {
            char buf[16384];
            ssize_t got = ::read(0, buf, std::min(sizeof buf, room));
            if (got == 0) {
                eof = true;
            } else if (got > 0) {
                swarm_reader_push(&rd, buf, std::size_t(got));
            }
        }
        swarm_line l;
        char err[128];
        // One line (or a put's bytes) at a time while room lasts, so
        // pieces wait.
        while (hp.room() && !hp.stopping) {
            if (swarm_reader_payload(&rd) > 0) {
                if (swarm_reader_idle(&rd)) break;
                hp.put_bytes(rd);
                continue;
            }
            int const r = swarm_reader_next(&rd, &l, err, sizeof err);
            if (r == 0) break;
            if (r == SWARM_UNFRAMED) {
                hp.lost_framing(err);
                break;
            }
            if (r < 0) {
                emit("error %s", err);
                continue;
            }
            hp.cmd(l);
        }
        if (eof && swarm_reader_idle(&rd)) {
            if (swarm_reader_payload(&rd) > 0)
                emit("error put %d: input ended inside its bytes", hp.put_piece);
            hp.stopping = true;
        }
        // After a fatal line nothing more is said.
        if (hp.started() && !hp.unframed) {
            hp.alerts();
            hp.tick(now_ms());
        }
    }
    std::signal(SIGALRM, on_alarm);
    ::alarm(stop_seconds);
    if (hp.started()) {
        hp.ses->abort();
        hp.ses.reset();
    }
    // After a fatal line the last word was said: the pieces hashed so far
    // are on disk for a restart, and the agent sees the exit status.
    if (hp.unframed) return 1;
    emit("stopped");
    return 0;
}
