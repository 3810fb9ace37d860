// swarm_files: ferry-swarm's work on files, apart from libtorrent: what
// it reads (the torrent, the certificate and key), the folders it makes
// below its save folder, and the files it makes from ranges of others
// (bundles and their parts, docs/SWARM.md "Bundles").
#ifndef FERRY_SWARM_SWARM_FILES_HPP
#define FERRY_SWARM_SWARM_FILES_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry_swarm {

// Text from libtorrent or a peer, made safe for one line.
std::string one_line(std::string s);

// A file's bytes, at most max of them; on failure "" and err says why.
std::string read_file(std::string const& path, std::size_t max, std::string& err);

// The folder that holds rel (a path beneath save, '/' between its
// components), its folders made on the way, none through a symlink: a
// descriptor, and the last component in name; -1 and errno on failure.
int open_parent(std::string const& save, std::string const& rel, std::string& name);

// A range of another file: len bytes from src_off of path (absolute, or
// beneath the save folder), to dst_off of the file made.
struct piece_of {
    std::int64_t src_off, len, dst_off;
    std::string const* path;
};

// A new file at rel beneath save made of the given ranges of other
// files: written under a temporary name and renamed over rel, so that a
// name the box's transfer may have linked elsewhere is never written
// through. "" or an error's text.
std::string make_file(std::string const& save, std::string const& rel,
    std::vector<piece_of> const& from);

}

#endif
