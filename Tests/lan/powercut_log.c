/*
 * powercut_log: what powercut_fs keeps until a sync, and the power cut that undoes it (see
 * powercut_fs.c for the model). Every function runs on the filesystem's single thread.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powercut_log.h"

#define SECTOR 512

/* One unsynced write or truncate of a file: the bytes it replaced at `off` and the size before. */
struct undo { off_t off; size_t len; char *pre; off_t old_size; size_t wrote; struct undo *prev; };
/* A file with unsynced data: its inode, an fd of its own for the cut, its writes newest first. */
struct file { ino_t ino; int fd; off_t synced_size; size_t unsynced; struct undo *log; struct file *next; };
/* A name change not yet durable: what to undo, and the directories whose fsync makes it durable. */
struct name {
    enum kind kind; char *path, *to, *trash; ino_t dirs[2]; int synced[2]; struct name *prev;
};

int root_fd;
char trash_dir[PATH_MAX];
static struct file *files;
static struct name *names;
long open_handles;
static long cuts, trash_serial;
static unsigned long long dropped_bytes, dropped_files, dropped_names;
static uint64_t rng;
int ignore_fsync;

/* xorshift64*, seeded per cut. */
static uint64_t next_random(void) {
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

/* A FUSE path as a path relative to the backing root. */
const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

/* The backing inode of the directory holding `path`. */
static ino_t parent_ino(const char *path) {
    char copy[PATH_MAX]; struct stat st;
    snprintf(copy, sizeof copy, "%s", path);
    return fstatat(root_fd, rel(dirname(copy)), &st, 0) == 0 ? st.st_ino : 0;
}

/* The unsynced state of inode `ino`, if it has one. */
static struct file *find_file(ino_t ino) {
    for (struct file *f = files; f; f = f->next) if (f->ino == ino) return f;
    return NULL;
}

/* The state of the file open as `fd`, made on its first unsynced change. */
struct file *file_of(int fd) {
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
void remember(struct file *f, off_t off, size_t len, size_t wrote) {
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
void synced(ino_t ino) {
    for (struct file **p = &files; *p; p = &(*p)->next) {
        if ((*p)->ino != ino) continue;
        struct file *f = *p; *p = f->next;
        for (struct undo *u = f->log, *prev; u; u = prev) { prev = u->prev; free(u->pre); free(u); }
        close(f->fd); free(f);
        return;
    }
}

/* Logs a name change made at `path` (and `to`, for a rename); `trash` holds what it removed. */
void log_name(enum kind kind, const char *path, const char *to, const char *trash) {
    struct name *n = calloc(1, sizeof *n);
    n->kind = kind; n->path = strdup(path); n->to = to ? strdup(to) : NULL; n->trash = trash ? strdup(trash) : NULL;
    n->dirs[0] = parent_ino(to ? to : path); n->dirs[1] = to ? parent_ino(path) : n->dirs[0];
    n->prev = names; names = n;
}

/* Moves the backing entry at `path` into the trash; returns its trash path (static) or NULL. */
const char *to_trash(const char *path) {
    static char where[PATH_MAX + 32];
    snprintf(where, sizeof where, "%s/%ld", trash_dir, ++trash_serial);
    return renameat(root_fd, rel(path), AT_FDCWD, where) == 0 ? where : NULL;
}

/* rm -rf of `path` (relative to `at`): what a lost directory held goes with it. */
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
void dir_synced(ino_t dir) {
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

/* The power cut: undoes (`tear` 0) or tears every unsynced change; -EBUSY while files are open. */
int power_cut(int tear, uint64_t seed) {
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

/* The counters the control file shows, one `name value` per line. */
int status_text(char *buf, size_t size) {
    unsigned long long bytes = 0, nfiles = 0, nnames = 0;
    for (struct file *f = files; f; f = f->next) { bytes += f->unsynced; nfiles++; }
    for (struct name *n = names; n; n = n->prev) nnames++;
    int n = snprintf(buf, size, "open %ld\nunsynced_bytes %llu\nunsynced_files %llu\nunsynced_names %llu\n"
                     "cuts %ld\ndropped_bytes %llu\ndropped_files %llu\ndropped_names %llu\n",
                     open_handles, bytes, nfiles, nnames, cuts, dropped_bytes, dropped_files, dropped_names);
    /* Then one `inode INO BYTES` line per file with unsynced data, while they fit. */
    for (struct file *f = files; f && n >= 0 && (size_t)n < size; f = f->next)
        n += snprintf(buf + n, size - (size_t)n, "inode %llu %zu\n", (unsigned long long)f->ino, f->unsynced);
    return n < 0 || (size_t)n < size ? n : (int)size - 1;
}
