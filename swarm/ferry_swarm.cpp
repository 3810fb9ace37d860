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

#include "swarm_files.hpp"
#include "swarm_helper.hpp"
#include "swarm_line.h"

using namespace ferry_swarm;

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
// Written (from libtorrent's thread) when alerts wait: wakes the loop.
int alert_pipe[2] = {-1, -1};

} // namespace

void ferry_swarm::emit(char const* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stdout, fmt, ap);
    va_end(ap);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

namespace {


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

} // namespace

namespace ferry_swarm {

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
    // Disk threads, which also hash what arrives: one per core, up to
    // four. libtorrent's ten suit many torrents on seeking disks; a box
    // runs one torrent, and threads beyond its cores only wake each
    // other (futex and scheduler time, in perf of the fan-out bench).
    long const cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    sp.set_int(lt::settings_pack::aio_threads, int(std::clamp(cores, 1L, 4L)));
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

} // namespace ferry_swarm

namespace {

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
