#ifndef ORDERSYNC_FAULT_VFS_INTERNAL_H
#define ORDERSYNC_FAULT_VFS_INTERNAL_H
// State shared by the VFS's control functions (fault_vfs.c) and its methods (fault_vfs_io.c).
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include "fault_vfs.h"

/// One write (or truncate) since the file's last sync: the bytes it replaced.
typedef struct fv_undo {
    int64_t offset;
    int64_t length;
    /// The previous content of [offset, offset + length); zeros past the old end of file.
    unsigned char *before;
    struct fv_undo *next;
} fv_undo;

/// One file by path (what the page cache of a machine holds for it), kept across closes:
/// closing a file does not sync it.
typedef struct fv_node {
    char *path;
    /// Undo entries since the last sync, newest first.
    fv_undo *undo;
    /// The size at the last sync (0 for a file created and never synced).
    int64_t synced_size;
    /// Never synced since this VFS created it.
    int never_synced;
    /// A handle to restore it through at a power cut (any open one), or null.
    struct fv_file *writer;
    struct fv_node *next;
} fv_node;

/// An open file: the wrapper, followed in memory by the "unix" VFS's own file object.
typedef struct fv_file {
    sqlite3_file base;
    sqlite3_file *real;
    /// Null for files without a name (temporary files): passed through, never faulted.
    fv_node *node;
    /// Its machine lost power while it was open: it does nothing from then on.
    int dead;
    struct fv_file *next_open;
} fv_file;

/// An armed rule.
typedef struct fv_rule {
    char *prefix;
    int ops;
    int countdown;
    int kind;
    int remaining;
    struct fv_rule *next;
} fv_rule;

/// A machine that is off.
typedef struct fv_off {
    char *prefix;
    struct fv_off *next;
} fv_off;

/// The VFS's global state, under `fv_lock`.
typedef struct {
    sqlite3_vfs *real;
    fv_node *nodes;
    fv_file *open_files;
    fv_rule *rules;
    fv_off *off;
    uint64_t seed;
    /// Syncs do not reach the real disk (`ordersync_fault_vfs_skip_real_sync`).
    int skip_real_sync;
    ordersync_fault_vfs_counters counters;
    /// The errno of the last injected failure (for xGetLastError).
    int last_errno;
} fv_state;

extern fv_state fv_global;
extern pthread_mutex_t fv_lock;

/// True when `path` starts with `prefix`.
int fv_has_prefix(const char *path, const char *prefix);
/// True when the machine holding `path` is off.
int fv_is_off(const char *path);
/// The node for `path`, made when missing.
fv_node *fv_node_for(const char *path);
/// Frees a node's undo log (its writes count as synced).
void fv_clear_undo(fv_node *node);
/// The armed rule matching this call (null: none), counted down.
struct fv_rule *fv_match_rule(const char *path, int op);
/// Cuts the power of `prefix` (the lock held).
int fv_power_cut_locked(const char *prefix, int mode);
/// The io methods of a wrapped file.
extern const sqlite3_io_methods fv_io_methods;

#endif
