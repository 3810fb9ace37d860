// swarm_files.cpp: ferry-swarm's work on files (swarm_files.hpp).
#include "swarm_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ferry_swarm {

namespace {

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

} // namespace

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

// A new file at rel beneath save made of the given ranges of other
// files (src_off, len, path of the source, dst_off): written under a
// temporary name and renamed over rel, so that a name the box's
// transfer may have linked elsewhere is never written through. 0, or
// an error's text.
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

}
