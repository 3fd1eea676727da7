/*
 * powercut_fs: a FUSE passthrough over a backing directory that can lose, on command, everything
 * not synced, as a power cut would. Built by Tests/lan/powercut.py at run time:
 *
 *     gcc -O1 -o powercut_fs powercut_fs.c $(pkg-config --cflags --libs fuse3)
 *     powercut_fs BACKING TRASH MOUNTPOINT
 *
 * What it models
 * - Data: every write and truncate goes through to the backing file at once (so reads see it),
 *   after its pre-image (the bytes it replaces and the size before it) is kept in memory, per
 *   inode. fsync or fdatasync of a file forgets its pre-images: from then on its data is "on
 *   disk".
 * - Names: creat/mknod/mkdir/symlink, unlink/rmdir and rename are applied at once and logged;
 *   an entry becomes durable once each directory it touched was fsynced (fsyncdir) after it.
 *   An unlinked or replaced file is moved to TRASH so a cut can bring it back.
 * - The cut (`cut drop SEED` or `cut tear SEED` written to /.powercut): refused while any file
 *   or directory of the mount is open (EBUSY). `drop` restores every pre-image (newest first)
 *   and the synced size; `tear` keeps or restores each 512-byte sector of every unsynced write
 *   at random (by SEED; a sector past the old end of file that is not kept reads as zeros) and
 *   ends the file at its synced or its current size. Then the names not durable are undone,
 *   newest first (a created file or directory is removed, an unlinked one put back, a rename
 *   reversed). Afterwards everything counts as synced.
 * - `fsync ignore` (and `fsync honour`) written to /.powercut: a disk that lies, acknowledging
 *   fsync and fsyncdir and keeping nothing; a durability test must fail on it.
 * - Reading /.powercut gives counters: open handles, unsynced bytes and files, names not
 *   durable, and what the cuts so far dropped.
 *
 * What it does not model: metadata (mode, owner, times) is always durable; a directory renamed
 *   is logged by its old paths only (entries inside it logged before keep their old paths);
 *   hard links are refused; fsync of a file does not make its directory entry durable (POSIX,
 *   stricter than ext4); writes reach the backing files in the order made, with no reordering
 *   other than `tear`'s sectors; the backing files themselves are never fsynced.
 *
 * Runs single-threaded (-s): every operation, and the cut, runs alone.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONTROL "/.powercut"
#define SECTOR 512

/* One unsynced write or truncate of a file: the bytes it replaced at `off` and the size before. */
struct undo { off_t off; size_t len; char *pre; off_t old_size; size_t wrote; struct undo *prev; };
/* A file with unsynced data: its inode, an fd of its own for the cut, its writes newest first. */
struct file { ino_t ino; int fd; off_t synced_size; size_t unsynced; struct undo *log; struct file *next; };
/* A name change not yet durable: what to undo, and the directories whose fsync makes it durable. */
enum kind { CREATED, MADE_DIR, UNLINKED, REMOVED_DIR, RENAMED };
struct name {
    enum kind kind; char *path, *to, *trash; ino_t dirs[2]; int synced[2]; struct name *prev;
};

static int root_fd;
static char trash_dir[PATH_MAX];
static struct file *files;
static struct name *names;
static long open_handles, cuts, trash_serial;
static unsigned long long dropped_bytes, dropped_files, dropped_names;
static uint64_t rng;
static int ignore_fsync;  /* `fsync ignore`: a disk that acknowledges syncs and keeps nothing */

/* xorshift64*, seeded per cut. */
static uint64_t next_random(void) {
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

/* A FUSE path as a path relative to the backing root. */
static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

/* The backing inode of the directory holding `path`. */
static ino_t parent_ino(const char *path) {
    char copy[PATH_MAX]; struct stat st;
    snprintf(copy, sizeof copy, "%s", path);
    return fstatat(root_fd, rel(dirname(copy)), &st, 0) == 0 ? st.st_ino : 0;
}

static struct file *find_file(ino_t ino) {
    for (struct file *f = files; f; f = f->next) if (f->ino == ino) return f;
    return NULL;
}

/* The state of the file open as `fd`, made on its first unsynced change. */
static struct file *file_of(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return NULL;
    struct file *f = find_file(st.st_ino);
    if (f) return f;
    /* An fd of our own that can read pre-images and write them back, whatever `fd` was opened for
     * (and it keeps the inode, so its number is not reused while it is logged). */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int own = open(self, O_RDWR);
    if (own < 0) return NULL;
    f = calloc(1, sizeof *f);
    f->ino = st.st_ino; f->fd = own; f->synced_size = st.st_size; f->next = files; files = f;
    return f;
}

/* Keeps the pre-image of [off, off+len) of `f` before a change that writes `wrote` bytes. */
static void remember(struct file *f, off_t off, size_t len, size_t wrote) {
    struct stat st; fstat(f->fd, &st);
    struct undo *u = calloc(1, sizeof *u);
    u->off = off; u->old_size = st.st_size; u->wrote = wrote;
    if (off < st.st_size) {
        u->len = (size_t)(st.st_size - off) < len ? (size_t)(st.st_size - off) : len;
        u->pre = malloc(u->len ? u->len : 1);
        ssize_t n = pread(f->fd, u->pre, u->len, off);
        u->len = n > 0 ? (size_t)n : 0;
    }
    u->prev = f->log; f->log = u; f->unsynced += wrote;
}

/* fsync: the file's data is on disk; its pre-images are forgotten. */
static void synced(ino_t ino) {
    for (struct file **p = &files; *p; p = &(*p)->next) {
        if ((*p)->ino != ino) continue;
        struct file *f = *p; *p = f->next;
        for (struct undo *u = f->log, *prev; u; u = prev) { prev = u->prev; free(u->pre); free(u); }
        close(f->fd); free(f);
        return;
    }
}

static void log_name(enum kind kind, const char *path, const char *to, const char *trash) {
    struct name *n = calloc(1, sizeof *n);
    n->kind = kind; n->path = strdup(path); n->to = to ? strdup(to) : NULL; n->trash = trash ? strdup(trash) : NULL;
    n->dirs[0] = parent_ino(to ? to : path); n->dirs[1] = to ? parent_ino(path) : n->dirs[0];
    n->prev = names; names = n;
}

/* Moves the backing entry at `path` into the trash; returns its trash path (static) or NULL. */
static const char *to_trash(const char *path) {
    static char where[PATH_MAX + 32];
    snprintf(where, sizeof where, "%s/%ld", trash_dir, ++trash_serial);
    return renameat(root_fd, rel(path), AT_FDCWD, where) == 0 ? where : NULL;
}

static void remove_tree(int at, const char *path) {
    if (unlinkat(at, path, 0) == 0 || errno == ENOENT) return;
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) remove_tree(dirfd(d), e->d_name);
    if (d) closedir(d);
    unlinkat(at, path, AT_REMOVEDIR);
}

/* fsyncdir: the name changes in that directory are durable (those touching two once both are). */
static void dir_synced(ino_t dir) {
    for (struct name **p = &names; *p;) {
        struct name *n = *p;
        for (int i = 0; i < 2; i++) if (n->dirs[i] == dir) n->synced[i] = 1;
        if (!(n->synced[0] && n->synced[1])) { p = &n->prev; continue; }
        *p = n->prev;
        if (n->trash) remove_tree(AT_FDCWD, n->trash);
        free(n->path); free(n->to); free(n->trash); free(n);
    }
}

/* Undoes one file's unsynced changes, wholly (`tear` 0) or sector by sector at random. */
static void cut_file(struct file *f, int tear) {
    struct stat st; fstat(f->fd, &st);
    off_t end = tear && (next_random() & 1) ? st.st_size : f->synced_size;
    static const char zeros[SECTOR];
    for (struct undo *u = f->log; u; u = u->prev) {
        if (!tear) { pwrite(f->fd, u->pre, u->len, u->off); ftruncate(f->fd, u->old_size); continue; }
        size_t span = u->wrote > u->len ? u->wrote : u->len;
        for (size_t at = 0; at < span; at += SECTOR) {
            if (next_random() & 1) continue;  /* this sector of the write reached the disk */
            size_t n = span - at < SECTOR ? span - at : SECTOR;
            size_t old = at < u->len ? (u->len - at < n ? u->len - at : n) : 0;
            if (old) pwrite(f->fd, u->pre + at, old, u->off + at);
            if (n > old) pwrite(f->fd, zeros, n - old, u->off + at + old);
        }
    }
    ftruncate(f->fd, end);
    dropped_bytes += f->unsynced; dropped_files++;
}

/* Undoes one name change that was not durable. */
static void cut_name(struct name *n) {
    switch (n->kind) {
    case CREATED: unlinkat(root_fd, rel(n->path), 0); break;
    case MADE_DIR: remove_tree(root_fd, rel(n->path)); break;
    case UNLINKED: case REMOVED_DIR: renameat(AT_FDCWD, n->trash, root_fd, rel(n->path)); break;
    case RENAMED:
        renameat(root_fd, rel(n->to), root_fd, rel(n->path));
        if (n->trash) renameat(AT_FDCWD, n->trash, root_fd, rel(n->to));
        break;
    }
    dropped_names++;
}

static int power_cut(int tear, uint64_t seed) {
    if (open_handles > 0) return -EBUSY;
    rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    while (files) { struct file *f = files; cut_file(f, tear); synced(f->ino); }
    while (names) {
        struct name *n = names; names = n->prev;
        cut_name(n); free(n->path); free(n->to); free(n->trash); free(n);
    }
    cuts++;
    return 0;
}

static int status_text(char *buf, size_t size) {
    unsigned long long bytes = 0, nfiles = 0, nnames = 0;
    for (struct file *f = files; f; f = f->next) { bytes += f->unsynced; nfiles++; }
    for (struct name *n = names; n; n = n->prev) nnames++;
    return snprintf(buf, size, "open %ld\nunsynced_bytes %llu\nunsynced_files %llu\nunsynced_names %llu\n"
                    "cuts %ld\ndropped_bytes %llu\ndropped_files %llu\ndropped_names %llu\n",
                    open_handles, bytes, nfiles, nnames, cuts, dropped_bytes, dropped_files, dropped_names);
}

/* FUSE operations ------------------------------------------------------------------------------ */

#define CHECK(call) ((call) == -1 ? -errno : 0)

static void *pc_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    /* Truncation arrives as truncate() before open(), and every write() at once (no writeback
     * cache): each reaches pc_write or pc_truncate, where its pre-image is kept. */
    conn->want &= ~(unsigned)(FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_WRITEBACK_CACHE);
    cfg->use_ino = 1; cfg->nullpath_ok = 1; cfg->hard_remove = 1;
    cfg->entry_timeout = 0; cfg->attr_timeout = 0; cfg->negative_timeout = 0;
    cfg->kernel_cache = 0; cfg->auto_cache = 0;
    return NULL;
}

static int pc_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if ((path && strcmp(path, CONTROL) == 0) || (fi && fi->fh == (uint64_t)-1)) {
        memset(st, 0, sizeof *st); st->st_mode = S_IFREG | 0600; st->st_nlink = 1; st->st_size = 4096;
        return 0;
    }
    if (fi && fi->fh != (uint64_t)-1) return CHECK(fstat((int)fi->fh, st));
    if (!path) return -EBADF;
    return CHECK(fstatat(root_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int pc_open(const char *path, struct fuse_file_info *fi) {
    if (strcmp(path, CONTROL) == 0) { fi->direct_io = 1; fi->fh = (uint64_t)-1; return 0; }
    int fd = openat(root_fd, rel(path), fi->flags & ~O_NOFOLLOW);
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd; open_handles++;
    return 0;
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    int fd = openat(root_fd, rel(path), fi->flags | O_CREAT | O_EXCL, mode);
    if (fd < 0 && errno == EEXIST && !(fi->flags & O_EXCL)) return pc_open(path, fi);
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd; open_handles++;
    log_name(CREATED, path, NULL, NULL);
    return 0;
}

static int pc_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    if (fi->fh == (uint64_t)-1) {
        char text[1024]; int n = status_text(text, sizeof text);
        if (off >= n) return 0;
        size_t len = (size_t)(n - off) < size ? (size_t)(n - off) : size;
        memcpy(buf, text + off, len);
        return (int)len;
    }
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int pc_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    if (fi->fh == (uint64_t)-1) {
        char cmd[64] = {0}, mode[16] = {0}; unsigned long long seed = 0;
        memcpy(cmd, buf, size < sizeof cmd - 1 ? size : sizeof cmd - 1);
        if (sscanf(cmd, "fsync %15s", mode) == 1 && (!strcmp(mode, "ignore") || !strcmp(mode, "honour"))) {
            ignore_fsync = strcmp(mode, "ignore") == 0;
            return (int)size;
        }
        if (sscanf(cmd, "cut %15s %llu", mode, &seed) != 2 || (strcmp(mode, "drop") && strcmp(mode, "tear")))
            return -EINVAL;
        int rc = power_cut(strcmp(mode, "tear") == 0, seed);
        return rc ? rc : (int)size;
    }
    int fd = (int)fi->fh;
    if (fi->flags & O_APPEND) { struct stat st; fstat(fd, &st); off = st.st_size; }
    struct file *f = file_of(fd);
    if (!f) return -errno;
    remember(f, off, size, size);
    ssize_t n = pwrite(fd, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    int fd = fi ? (int)fi->fh : openat(root_fd, rel(path), O_WRONLY);
    if (fd < 0) return -errno;
    struct stat st; struct file *f = fstat(fd, &st) == 0 ? file_of(fd) : NULL;
    if (!f) { int code = errno; if (!fi) close(fd); return -code; }
    remember(f, size, st.st_size > size ? (size_t)(st.st_size - size) : 0,
             st.st_size > size ? (size_t)(st.st_size - size) : (size_t)(size - st.st_size));
    int rc = CHECK(ftruncate(fd, size));
    if (!fi) close(fd);
    return rc;
}

static int pc_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path; (void)datasync;
    struct stat st;
    if (!ignore_fsync && fi->fh != (uint64_t)-1 && fstat((int)fi->fh, &st) == 0) synced(st.st_ino);
    return 0;
}

static int pc_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    if (fi->fh == (uint64_t)-1) return 0;  /* the control file is not counted */
    close((int)fi->fh); open_handles--;
    return 0;
}

static int pc_mknod(const char *path, mode_t mode, dev_t dev) {
    if (mknodat(root_fd, rel(path), mode, dev) == -1) return -errno;
    log_name(CREATED, path, NULL, NULL);
    return 0;
}

static int pc_mkdir(const char *path, mode_t mode) {
    if (mkdirat(root_fd, rel(path), mode) == -1) return -errno;
    log_name(MADE_DIR, path, NULL, NULL);
    return 0;
}

static int pc_symlink(const char *target, const char *path) {
    if (symlinkat(target, root_fd, rel(path)) == -1) return -errno;
    log_name(CREATED, path, NULL, NULL);
    return 0;
}

static int pc_readlink(const char *path, char *buf, size_t size) {
    ssize_t n = readlinkat(root_fd, rel(path), buf, size - 1);
    if (n < 0) return -errno;
    buf[n] = 0;
    return 0;
}

static int pc_unlink(const char *path) {
    const char *trash = to_trash(path);
    if (!trash) return -errno;
    log_name(UNLINKED, path, NULL, trash);
    return 0;
}

static int pc_rmdir(const char *path) {
    struct stat st; int fd = openat(root_fd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -errno;
    DIR *d = fdopendir(fd); int entries = 0;
    for (struct dirent *e; (e = readdir(d));) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    if (entries) return -ENOTEMPTY;
    if (fstatat(root_fd, rel(path), &st, 0) != 0) return -errno;
    const char *trash = to_trash(path);
    if (!trash) return -errno;
    log_name(REMOVED_DIR, path, NULL, trash);
    return 0;
}

static int pc_rename(const char *from, const char *to, unsigned int flags) {
    struct stat st;
    if (flags & ~RENAME_NOREPLACE) return -EINVAL;
    int exists = fstatat(root_fd, rel(to), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && (flags & RENAME_NOREPLACE)) return -EEXIST;
    if (fstatat(root_fd, rel(from), &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
    const char *trash = exists ? to_trash(to) : NULL;
    if (exists && !trash) return -errno;
    if (renameat(root_fd, rel(from), root_fd, rel(to)) == -1) {
        int code = errno;
        if (trash) renameat(AT_FDCWD, trash, root_fd, rel(to));
        return -code;
    }
    log_name(RENAMED, from, to, trash);
    return 0;
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    return fi ? CHECK(fchmod((int)fi->fh, mode)) : CHECK(fchmodat(root_fd, rel(path), mode, 0));
}

static int pc_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    return fi ? CHECK(fchown((int)fi->fh, uid, gid))
              : CHECK(fchownat(root_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int pc_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    return fi ? CHECK(futimens((int)fi->fh, tv)) : CHECK(utimensat(root_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int pc_statfs(const char *path, struct statvfs *st) { (void)path; return CHECK(fstatvfs(root_fd, st)); }

static int pc_opendir(const char *path, struct fuse_file_info *fi) {
    int fd = openat(root_fd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -errno;
    fi->fh = (uint64_t)fd; open_handles++;
    return 0;
}

static int pc_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
    (void)path; (void)off; (void)flags;
    DIR *d = fdopendir(dup((int)fi->fh));
    if (!d) return -errno;
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    closedir(d);
    return 0;
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path; (void)datasync;
    struct stat st;
    if (!ignore_fsync && fstat((int)fi->fh, &st) == 0) dir_synced(st.st_ino);
    return 0;
}

static int pc_releasedir(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close((int)fi->fh); open_handles--;
    return 0;
}

static int pc_access(const char *path, int mask) {
    return strcmp(path, CONTROL) == 0 ? 0 : CHECK(faccessat(root_fd, rel(path), mask, AT_SYMLINK_NOFOLLOW));
}

static const struct fuse_operations operations = {
    .init = pc_init, .getattr = pc_getattr, .open = pc_open, .create = pc_create, .read = pc_read,
    .write = pc_write, .truncate = pc_truncate, .fsync = pc_fsync, .release = pc_release, .mknod = pc_mknod,
    .mkdir = pc_mkdir, .symlink = pc_symlink, .readlink = pc_readlink, .unlink = pc_unlink, .rmdir = pc_rmdir,
    .rename = pc_rename, .chmod = pc_chmod, .chown = pc_chown, .utimens = pc_utimens, .statfs = pc_statfs,
    .opendir = pc_opendir, .readdir = pc_readdir, .fsyncdir = pc_fsyncdir, .releasedir = pc_releasedir,
    .access = pc_access,
};

int main(int argc, char *argv[]) {
    if (argc != 4) { fprintf(stderr, "usage: %s BACKING TRASH MOUNTPOINT\n", argv[0]); return 64; }
    root_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (root_fd < 0 || !realpath(argv[2], trash_dir)) { perror("powercut_fs: backing or trash"); return 66; }
    char *args[] = {argv[0], "-f", "-s", "-o", "fsname=powercut,subtype=powercut", argv[3], NULL};
    return fuse_main(6, args, &operations, NULL);
}
