/* powercut_log: the state of powercut_fs between syncs and the power cut (powercut_log.c). */
#ifndef POWERCUT_LOG_H
#define POWERCUT_LOG_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

/* What a logged name change was, to undo it. */
enum kind { CREATED, MADE_DIR, UNLINKED, REMOVED_DIR, RENAMED };
struct file;

extern int root_fd;                /* the backing directory */
extern char trash_dir[PATH_MAX];   /* where unlinked and replaced entries wait for a sync */
extern long open_handles;          /* files and directories of the mount open now */
extern int ignore_fsync;           /* `fsync ignore`: a disk that acknowledges syncs and keeps nothing */

/* A FUSE path as a path relative to the backing root. */
const char *rel(const char *path);
/* The state of the file open as `fd`, made on its first unsynced change (NULL: errno). */
struct file *file_of(int fd);
/* Keeps the pre-image of [off, off+len) of `f` before a change that writes `wrote` bytes. */
void remember(struct file *f, off_t off, size_t len, size_t wrote);
/* fsync: the file's data is on disk; its pre-images are forgotten. */
void synced(ino_t ino);
/* Logs a name change made at `path` (and `to`, for a rename); `trash` holds what it removed. */
void log_name(enum kind kind, const char *path, const char *to, const char *trash);
/* Moves the backing entry at `path` into the trash; returns its trash path (static) or NULL. */
const char *to_trash(const char *path);
/* fsyncdir: the name changes in that directory are durable (those touching two once both are). */
void dir_synced(ino_t dir);
/* The power cut: undoes (`tear` 0) or tears every unsynced change; -EBUSY while files are open. */
int power_cut(int tear, uint64_t seed);
/* The counters the control file shows. */
int status_text(char *buf, size_t size);

#endif
