// swarm_parts.cpp: what a box's helper serves from the box's own files
// (`link`), what it says it holds, and bundles: made from the box's files
// (`from`), and made into files once whole (`part`); swarm_helper.hpp.
#include <libtorrent/alert_types.hpp>
#include <libtorrent/torrent_status.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "swarm_files.hpp"
#include "swarm_helper.hpp"

namespace ferry_swarm {

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

}
