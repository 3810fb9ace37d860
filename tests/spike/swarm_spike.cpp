// swarm_spike: does libtorrent-rasterbar 2.0.8 do what ferry's fan-out
// needs?  Private v2 torrents carrying a per-transfer CA (ssl_cert), boxes
// that listen only on an SSL port of one loopback address, peers added by
// hand, nothing discovered (no tracker, DHT, LSD, PEX, UPnP, NAT-PMP), and a
// seed fed piece by piece with add_piece() while the others already
// download.  Driven by swarm_spike.sh; see docs/SWARM.md.
//
//   swarm_spike make SRC_DIR OUT.torrent [--ca CA.pem] [--hybrid]
//                    [--piece-size BYTES]
//   swarm_spike box --name NAME --ip 127.0.0.X --port P --torrent T
//                   --save DIR [--cert C --key K --dh D] [--plain]
//                   [--peer IP:PORT]... [--feed SRC_PARENT] [--feed-rate MBps]
//                   [--feed-wait-peers N] [--feed-stripe K/N]
//                   [--timeout S] [--stop-file F] [--ready-file F]
//                   [--done-file F] [--upload-limit MBps] [--recheck]
//
// A box prints one line per event on stdout, each starting with the
// wall-clock time in ms, and exits 0 when it holds the whole torrent
// (and, with --recheck, every piece passed a fresh hash check), 2 when
// --timeout passed first, 1 on errors.

#include <libtorrent/add_torrent_params.hpp>
#include <libtorrent/alert_types.hpp>
#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/ip_filter.hpp>
#include <libtorrent/peer_info.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/session_params.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/torrent_status.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace lt = libtorrent;

namespace {

long long now_ms()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string g_name = "?";

void logf(char const* fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(char const* fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::printf("%lld %s %s\n", now_ms(), g_name.c_str(), buf);
    std::fflush(stdout);
}

[[noreturn]] void die(std::string const& msg)
{
    std::fprintf(stderr, "swarm_spike: %s\n", msg.c_str());
    std::exit(1);
}

std::string slurp(std::string const& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) die("cannot read " + path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

bool exists(std::string const& path)
{
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

void touch(std::string const& path)
{
    if (path.empty()) return;
    std::ofstream f(path);
}

std::string dirname_of(std::string p)
{
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    auto const i = p.rfind('/');
    if (i == std::string::npos) return ".";
    if (i == 0) return "/";
    return p.substr(0, i);
}

// ---------------------------------------------------------------- make

int cmd_make(int argc, char** argv)
{
    if (argc < 4) die("usage: make SRC_DIR OUT.torrent [--ca CA.pem] [--hybrid] [--piece-size N]");
    std::string const src = argv[2];
    std::string const out = argv[3];
    std::string ca;
    bool hybrid = false;
    int piece_size = 0; // libtorrent picks
    for (int i = 4; i < argc; ++i) {
        std::string const a = argv[i];
        if (a == "--ca" && i + 1 < argc) ca = argv[++i];
        else if (a == "--hybrid") hybrid = true;
        else if (a == "--piece-size" && i + 1 < argc) piece_size = std::atoi(argv[++i]);
        else die("make: unknown argument " + a);
    }

    lt::file_storage fs;
    lt::add_files(fs, src);
    if (fs.num_files() == 0) die("make: no files under " + src);
    lt::create_flags_t const flags = hybrid ? lt::create_flags_t{} : lt::create_torrent::v2_only;
    lt::create_torrent ct(fs, piece_size, flags);
    ct.set_priv(true);
    ct.set_creator("ferry swarm_spike");
    if (!ca.empty()) ct.set_root_cert(slurp(ca));
    lt::set_piece_hashes(ct, dirname_of(src));

    std::vector<char> buf;
    lt::bencode(std::back_inserter(buf), ct.generate());
    std::ofstream f(out, std::ios::binary);
    f.write(buf.data(), std::streamsize(buf.size()));
    if (!f) die("make: cannot write " + out);
    f.close();

    lt::torrent_info ti(out);
    std::printf("torrent %s: name=%s files=%d pieces=%d piece_size=%d v1=%d v2=%d"
                " private=%d ssl_cert=%zu bytes\n",
        out.c_str(), ti.name().c_str(), ti.num_files(), ti.num_pieces(), ti.piece_length(),
        int(ti.info_hashes().has_v1()), int(ti.info_hashes().has_v2()), int(ti.priv()),
        ti.ssl_cert().size());
    if (ti.info_hashes().has_v1()) {
        std::ostringstream s;
        s << ti.info_hashes().v1;
        std::printf("info-hash v1 %s\n", s.str().c_str());
    }
    if (ti.info_hashes().has_v2()) {
        std::ostringstream s;
        s << ti.info_hashes().v2;
        std::printf("info-hash v2 %s (SNI uses its first 20 bytes, hex)\n", s.str().c_str());
    }
    return 0;
}

// ---------------------------------------------------------------- box

struct box_opts {
    std::string ip, torrent, save, cert, key, dh, feed, stop_file, ready_file, done_file;
    int port = 0;
    bool plain = false, recheck = false;
    double feed_rate = 0; // MB/s, 0 = as fast as the disk takes it
    double upload_limit = 0;
    int timeout = 120;
    int feed_wait_peers = 0;
    int stripe_k = 0, stripe_n = 1; // feed pieces p with p % n == k
    std::vector<lt::tcp::endpoint> peers;
};

lt::tcp::endpoint parse_ep(std::string const& s)
{
    auto const c = s.rfind(':');
    if (c == std::string::npos) die("bad endpoint " + s);
    return lt::tcp::endpoint(lt::make_address(s.substr(0, c)),
        static_cast<unsigned short>(std::atoi(s.c_str() + c + 1)));
}

// The bytes of piece `p` read from the source tree (the client's copy; in
// ferry these would arrive over the SSH link), v2 padding as zeros.
std::vector<char> read_piece(lt::file_storage const& fs, std::string const& parent, lt::piece_index_t p)
{
    int const size = fs.piece_size(p);
    std::vector<char> buf(std::size_t(size), 0);
    auto const slices = fs.map_block(p, 0, size);
    std::int64_t at = 0;
    for (auto const& s : slices) {
        if (!fs.pad_file_at(s.file_index)) {
            std::string const path = parent + "/" + fs.file_path(s.file_index);
            FILE* f = std::fopen(path.c_str(), "rb");
            if (!f) die("feed: cannot open " + path);
            if (fseeko(f, off_t(s.offset), SEEK_SET) != 0
                || std::fread(buf.data() + at, 1, std::size_t(s.size), f) != std::size_t(s.size))
                die("feed: short read on " + path);
            std::fclose(f);
        }
        at += s.size;
    }
    return buf;
}

struct rusage_report {
    void print()
    {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        logf("CPU user=%.2fs sys=%.2fs maxrss=%ldMiB",
            double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) / 1e6,
            double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) / 1e6,
            ru.ru_maxrss / 1024);
    }
};

int cmd_box(int argc, char** argv)
{
    box_opts o;
    for (int i = 2; i < argc; ++i) {
        std::string const a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--name") g_name = next();
        else if (a == "--ip") o.ip = next();
        else if (a == "--port") o.port = std::atoi(next().c_str());
        else if (a == "--torrent") o.torrent = next();
        else if (a == "--save") o.save = next();
        else if (a == "--cert") o.cert = next();
        else if (a == "--key") o.key = next();
        else if (a == "--dh") o.dh = next();
        else if (a == "--plain") o.plain = true;
        else if (a == "--recheck") o.recheck = true;
        else if (a == "--peer") o.peers.push_back(parse_ep(next()));
        else if (a == "--feed") o.feed = next();
        else if (a == "--feed-wait-peers") o.feed_wait_peers = std::atoi(next().c_str());
        else if (a == "--feed-stripe") {
            std::string const v = next();
            if (std::sscanf(v.c_str(), "%d/%d", &o.stripe_k, &o.stripe_n) != 2 || o.stripe_n < 1
                || o.stripe_k < 0 || o.stripe_k >= o.stripe_n)
                die("--feed-stripe K/N");
        } else if (a == "--feed-rate") o.feed_rate = std::atof(next().c_str());
        else if (a == "--upload-limit") o.upload_limit = std::atof(next().c_str());
        else if (a == "--timeout") o.timeout = std::atoi(next().c_str());
        else if (a == "--stop-file") o.stop_file = next();
        else if (a == "--ready-file") o.ready_file = next();
        else if (a == "--done-file") o.done_file = next();
        else die("box: unknown argument " + a);
    }
    if (o.ip.empty() || !o.port || o.torrent.empty() || o.save.empty())
        die("box: --ip, --port, --torrent and --save are required");

    lt::settings_pack sp;
    // One listen socket: this box's address only, SSL unless --plain.  No
    // plain BitTorrent port at all in SSL mode.
    sp.set_str(lt::settings_pack::listen_interfaces,
        o.ip + ":" + std::to_string(o.port) + (o.plain ? "" : "s"));
    // Outgoing connections from the same address, so a peer sees who we are.
    sp.set_str(lt::settings_pack::outgoing_interfaces, o.ip);
    sp.set_bool(lt::settings_pack::enable_dht, false);
    sp.set_bool(lt::settings_pack::enable_lsd, false);
    sp.set_bool(lt::settings_pack::enable_upnp, false);
    sp.set_bool(lt::settings_pack::enable_natpmp, false);
    // TCP only: uTP over loopback only adds CPU, and the boxes' links are
    // plain TCP-friendly datacenter networks.
    sp.set_bool(lt::settings_pack::enable_incoming_utp, false);
    sp.set_bool(lt::settings_pack::enable_outgoing_utp, false);
    sp.set_int(lt::settings_pack::min_reconnect_time, 1);
    sp.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, true);
    sp.set_int(lt::settings_pack::alert_mask,
        lt::alert_category::error | lt::alert_category::status | lt::alert_category::peer
            | lt::alert_category::connect | lt::alert_category::block_progress
            | lt::alert_category::piece_progress);
    if (o.upload_limit > 0)
        sp.set_int(lt::settings_pack::upload_rate_limit, int(o.upload_limit * 1e6));

    lt::session_params params(sp);
    // No plugins: the default set is ut_metadata, ut_pex and smart_ban; PEX
    // must not run (private torrents disable it too), and the metadata comes
    // with the .torrent.
    params.extensions.clear();
    lt::session ses(std::move(params));
    if (o.upload_limit > 0) {
        // Loopback is a "local network", whose peers libtorrent puts outside
        // the global (rate-limited) peer class: put every address in it.
        lt::ip_filter f;
        f.add_rule(lt::make_address("0.0.0.0"), lt::make_address("255.255.255.255"),
            1u << static_cast<std::uint32_t>(lt::session::global_peer_class_id));
        ses.set_peer_class_filter(f);
    }

    lt::add_torrent_params atp;
    lt::error_code ec;
    atp.ti = std::make_shared<lt::torrent_info>(o.torrent, ec);
    if (ec) die("box: " + o.torrent + ": " + ec.message());
    atp.save_path = o.save;
    atp.flags &= ~lt::torrent_flags::auto_managed;
    atp.flags &= ~lt::torrent_flags::paused;
    if (o.ip.empty()) die("unreachable");
    bool const ssl_torrent = !atp.ti->ssl_cert().empty();
    logf("START ip=%s port=%d mode=%s ssl_torrent=%d v2=%d v1=%d pieces=%d",
        o.ip.c_str(), o.port, o.plain ? "plain" : "ssl", int(ssl_torrent),
        int(atp.ti->info_hashes().has_v2()), int(atp.ti->info_hashes().has_v1()),
        atp.ti->num_pieces());
    lt::file_storage const fs = atp.ti->files();
    int const num_pieces = atp.ti->num_pieces();
    lt::torrent_handle h = ses.add_torrent(std::move(atp), ec);
    if (ec) die("box: add_torrent: " + ec.message());

    if (!o.cert.empty()) {
        // Files; set_ssl_certificate_buffer() takes the PEM text instead.
        h.set_ssl_certificate(o.cert, o.key, o.dh);
        logf("CERT set %s", o.cert.c_str());
    } else {
        logf("CERT none");
    }

    auto const start = now_ms();
    auto const deadline = start + o.timeout * 1000LL;
    bool checked = false, done = false, rechecking = false, verified = !o.recheck;
    bool fed_all = o.feed.empty();
    // The pieces this box is fed (all, or its stripe K/N of them) and how
    // many of those have passed the hash check.
    std::vector<lt::piece_index_t> to_feed;
    std::vector<char> is_fed(std::size_t(num_pieces), 0);
    if (!o.feed.empty())
        for (int p = o.stripe_k; p < num_pieces; p += o.stripe_n) to_feed.emplace_back(p);
    std::size_t next_feed = 0;
    std::size_t passed = 0;
    long long first_block_ms = 0, done_ms = 0, feed_start_ms = 0;
    std::map<std::string, long long> blocks_from; // source ip -> 16 KiB blocks
    std::set<std::string> ssl_errors;
    long long last_connect = 0;
    int rc = 2;

    for (;;) {
        std::vector<lt::alert*> alerts;
        ses.pop_alerts(&alerts);
        for (lt::alert* a : alerts) {
            if (auto* bf = lt::alert_cast<lt::block_finished_alert>(a)) {
                if (!first_block_ms && bf->endpoint.port() != 0) {
                    first_block_ms = now_ms();
                    logf("FIRST_BLOCK from %s piece %d", bf->endpoint.address().to_string().c_str(),
                        static_cast<int>(bf->piece_index));
                }
                // add_piece() blocks come from no peer (0.0.0.0).
                ++blocks_from[bf->endpoint.port() == 0 ? std::string("add_piece")
                                                        : bf->endpoint.address().to_string()];
            } else if (lt::alert_cast<lt::torrent_checked_alert>(a)) {
                if (rechecking) {
                    rechecking = false;
                    lt::torrent_status const st = h.status();
                    verified = st.num_pieces == num_pieces;
                    logf("RECHECK %d/%d pieces pass", st.num_pieces, num_pieces);
                } else {
                    checked = true;
                    logf("CHECKED state=%d", int(h.status().state));
                }
            } else if (auto* pf = lt::alert_cast<lt::piece_finished_alert>(a)) {
                if (is_fed[std::size_t(static_cast<int>(pf->piece_index))]) ++passed;
            } else if (auto* hf = lt::alert_cast<lt::hash_failed_alert>(a)) {
                logf("HASH_FAILED piece %d", static_cast<int>(hf->piece_index));
            } else if (lt::alert_cast<lt::torrent_finished_alert>(a)) {
                if (!done) {
                    done = true;
                    done_ms = now_ms();
                    logf("FINISHED in %.3fs", double(done_ms - start) / 1e3);
                }
            } else if (auto* pc = lt::alert_cast<lt::peer_connect_alert>(a)) {
                logf("PEER_CONNECT %s", pc->endpoint.address().to_string().c_str());
            } else if (auto* pe = lt::alert_cast<lt::peer_error_alert>(a)) {
                std::string const m = pe->endpoint.address().to_string() + " "
                    + lt::operation_name(pe->op) + ": " + pe->error.message();
                if (ssl_errors.insert(m).second) logf("PEER_ERROR %s", m.c_str());
            } else if (auto* pd = lt::alert_cast<lt::peer_disconnected_alert>(a)) {
                if (pd->error) {
                    std::string const m = pd->endpoint.address().to_string() + " "
                        + lt::operation_name(pd->op) + ": " + pd->error.message();
                    if (ssl_errors.insert(m).second) logf("PEER_DISCONNECT %s", m.c_str());
                }
            } else if (auto* te = lt::alert_cast<lt::torrent_error_alert>(a)) {
                logf("TORRENT_ERROR %s %s", te->filename(), te->error.message().c_str());
            } else if (auto* le = lt::alert_cast<lt::listen_failed_alert>(a)) {
                logf("LISTEN_FAILED %s", le->message().c_str());
            } else if (auto* ls = lt::alert_cast<lt::listen_succeeded_alert>(a)) {
                char const* type = ls->socket_type == lt::socket_type_t::tcp_ssl ? "tcp_ssl"
                    : ls->socket_type == lt::socket_type_t::utp_ssl          ? "utp_ssl (udp)"
                    : ls->socket_type == lt::socket_type_t::tcp              ? "tcp"
                    : ls->socket_type == lt::socket_type_t::utp              ? "utp (udp)"
                                                                             : "other";
                logf("LISTEN %s:%d %s", ls->address.to_string().c_str(), ls->port, type);
            } else if (lt::alert_cast<lt::torrent_need_cert_alert>(a)) {
                logf("NEED_CERT (torrent_need_cert_alert)");
            }
        }

        long long const t = now_ms();

        // Peers are added by hand, and again every second while not connected
        // (they may not have been listening yet).
        if (t - last_connect > 1000) {
            last_connect = t;
            std::vector<lt::peer_info> pi;
            h.get_peer_info(pi);
            for (auto const& ep : o.peers) {
                bool have = false;
                for (auto const& p : pi)
                    if (p.ip.address() == ep.address()) have = true;
                if (!have) h.connect_peer(ep);
            }
        }

        // The seed role: pieces "arrive" from the client and are handed
        // to libtorrent with add_piece(); it hashes them against the v2
        // merkle tree and announces each (HAVE) to the peers as it passes.
        if (checked && !fed_all && !feed_start_ms && !o.ready_file.empty() && !exists(o.ready_file))
            touch(o.ready_file);
        // The client starts sending once the boxes are up (here: once
        // --feed-wait-peers of them are connected).
        if (checked && !fed_all
            && (feed_start_ms || h.status().num_peers >= o.feed_wait_peers)) {
            if (!feed_start_ms) {
                feed_start_ms = t;
                logf("FEED start rate=%s", o.feed_rate > 0 ? std::to_string(o.feed_rate).c_str() : "max");
            }
            std::size_t budget = to_feed.size();
            if (o.feed_rate > 0) {
                double const allowed = o.feed_rate * 1e6 * double(t - feed_start_ms) / 1e3;
                budget = std::size_t(allowed / fs.piece_length()) + 1;
            }
            // At most 32 pieces handed over and not yet hashed: bounded memory.
            while (next_feed < to_feed.size() && next_feed < budget && next_feed - passed < 32) {
                lt::piece_index_t const p = to_feed[next_feed];
                is_fed[std::size_t(static_cast<int>(p))] = 1;
                h.add_piece(p, read_piece(fs, o.feed, p));
                ++next_feed;
            }
            if (next_feed == to_feed.size()) {
                fed_all = true;
                logf("FEED all %zu pieces (stripe %d/%d of %d) handed over in %.3fs",
                    to_feed.size(), o.stripe_k, o.stripe_n, num_pieces,
                    double(now_ms() - feed_start_ms) / 1e3);
            }
        } else if (checked && o.feed.empty() && !o.ready_file.empty() && !exists(o.ready_file)) {
            touch(o.ready_file);
        }

        if (done && !verified && !rechecking) {
            rechecking = true;
            h.force_recheck();
        }

        if (done && verified && rc != 0) {
            rc = 0;
            touch(o.done_file);
        }

        bool const stop = !o.stop_file.empty() ? exists(o.stop_file) : (rc == 0);
        if (stop || t > deadline) {
            if (rc != 0) logf("TIMEOUT after %ds, not complete", o.timeout);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    lt::torrent_status const st = h.status();
    std::string src;
    for (auto const& b : blocks_from) {
        src += " " + b.first + "=" + std::to_string(b.second);
    }
    // all_time_*: the session counters restart with force_recheck().
    logf("RESULT rc=%d pieces=%d/%d down=%lld up=%lld blocks_from:%s", rc, st.num_pieces,
        num_pieces, (long long)st.all_time_download, (long long)st.all_time_upload,
        src.empty() ? " none" : src.c_str());
    if (done_ms && first_block_ms)
        logf("TIMES first_block=+%.3fs finished=+%.3fs", double(first_block_ms - start) / 1e3,
            double(done_ms - start) / 1e3);
    rusage_report{}.print();
    return rc;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) die("usage: swarm_spike make|box ...");
    std::string const role = argv[1];
    try {
        if (role == "make") return cmd_make(argc, argv);
        if (role == "box") return cmd_box(argc, argv);
    } catch (std::exception const& e) {
        die(role + ": " + e.what());
    }
    die("unknown role " + role);
}
