// swarm_helper.hpp: one box's swarm member, its state between
// ferry_swarm.cpp (the lines, the session, the alerts, the main loop) and
// swarm_parts.cpp (what it serves from the box's own files, and the
// bundles' parts: docs/SWARM.md "Bundles").
#ifndef FERRY_SWARM_SWARM_HELPER_HPP
#define FERRY_SWARM_SWARM_HELPER_HPP

#include <libtorrent/ip_filter.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "swarm_line.h"

namespace ferry_swarm {

namespace lt = libtorrent;

// Parts of bundles one helper is told of: the files of a transfer.
constexpr std::size_t max_parts = 1 << 22;

// One event line to the agent, on stdout.
void emit(char const* fmt, ...) __attribute__((format(printf, 1, 2)));

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

}

#endif
