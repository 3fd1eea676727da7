/*
 * powercut_fs: a FUSE passthrough over a backing directory that can lose, on command, everything
 * not synced, as a power cut would. Built by Tests/lan/powercut.py at run time:
 *
 *     gcc -O1 -o powercut_fs powercut_fs.c powercut_log.c $(pkg-config --cflags --libs fuse3)
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
 *   at random (by SEED, for the same writes in the same order; a sector past the old end of file
 *   that is not kept reads as zeros) and ends the file at its synced or its current size. Then
 *   the names not durable are undone, newest first (a created file or directory is removed, an
 *   unlinked one put back, a rename reversed). Afterwards everything counts as synced.
 * - `kill-at-fsync N` written to /.powercut: the Nth fsync or fdatasync from then on is not
 *   done; the process calling it is SIGKILLed inside the call (a cut in the middle of a commit,
 *   its data written and not synced). `killed_pid` in the counters names it.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powercut_log.h"

#define CONTROL "/.powercut"

/* `kill-at-fsync N`: the Nth fsync from now on is not done; its caller is SIGKILLed inside it. */
static long kill_countdown;
static pid_t killed_pid;

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
        char text[4096]; int n = snprintf(text, sizeof text, "killed_pid %ld\nkill_countdown %ld\n",
                                         (long)killed_pid, kill_countdown);
        n += status_text(text + n, sizeof text - (size_t)n);
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
        long count = 0;
        if (sscanf(cmd, "kill-at-fsync %ld", &count) == 1 && count > 0) {
            kill_countdown = count; killed_pid = 0;
            return (int)size;
        }
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
    if (kill_countdown > 0 && --kill_countdown == 0) {
        /* FUSE passes the caller's thread id; kill(2) of a thread id signals its whole process. */
        killed_pid = fuse_get_context()->pid;
        kill(killed_pid, SIGKILL);
        return -EIO;
    }
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
