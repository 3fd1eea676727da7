// The methods of the fault VFS and of its files: the "unix" VFS's, with the writes since each
// file's last sync recorded and armed faults injected (see fault_vfs.h).
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fault_vfs_internal.h"

/// What an armed rule does to a write, sync or truncate of `f`: SQLITE_OK to go on, else the
/// result to return. `*lie` is set for a sync that must lie.
static int fv_apply_rule(fv_file *f, int op, int ioerr, int *lie) {
    if (f->dead) {
        fv_global.counters.dead_calls += 1;
        return ioerr;
    }
    if (!f->node) return SQLITE_OK;
    fv_rule *rule = fv_match_rule(f->node->path, op);
    if (!rule) return SQLITE_OK;
    fv_global.counters.faults_injected += 1;
    switch (rule->kind) {
    case ORDERSYNC_FAULT_EIO:
        fv_global.last_errno = EIO;
        return ioerr;
    case ORDERSYNC_FAULT_ENOSPC:
        fv_global.last_errno = ENOSPC;
        return SQLITE_FULL;
    case ORDERSYNC_FAULT_LYING_SYNC:
        if (op == ORDERSYNC_FAULT_ON_SYNC) *lie = 1;
        return SQLITE_OK;
    case ORDERSYNC_FAULT_POWER_CUT_DROP:
    case ORDERSYNC_FAULT_POWER_CUT_TEAR:
        fv_power_cut_locked(
            rule->prefix, rule->kind == ORDERSYNC_FAULT_POWER_CUT_TEAR ? ORDERSYNC_POWER_TEAR : ORDERSYNC_POWER_DROP);
        fv_global.last_errno = EIO;
        return ioerr;
    default:
        return SQLITE_OK;
    }
}

/// Records that [offset, offset + length) of `f` is about to change: its current content
/// (zeros past the end of the file) goes on the node's undo log.
static void fv_record(fv_file *f, int64_t offset, int64_t length) {
    if (!f->node || length <= 0) return;
    sqlite3_int64 size = 0;
    f->real->pMethods->xFileSize(f->real, &size);
    fv_undo *u = calloc(1, sizeof *u);
    u->offset = offset;
    u->length = length;
    u->before = calloc(1, (size_t)length);
    if (offset < size) {
        int64_t have = size - offset < length ? size - offset : length;
        // A short read fills the rest with zeros (SQLITE_IOERR_SHORT_READ), as wanted.
        f->real->pMethods->xRead(f->real, u->before, (int)have, offset);
    }
    u->next = f->node->undo;
    f->node->undo = u;
}

static int fv_close(sqlite3_file *file) {
    fv_file *f = (fv_file *)file;
    pthread_mutex_lock(&fv_lock);
    for (fv_file **p = &fv_global.open_files; *p; p = &(*p)->next_open) {
        if (*p == f) {
            *p = f->next_open;
            break;
        }
    }
    if (f->node && f->node->writer == f) {
        f->node->writer = NULL;
        for (fv_file *o = fv_global.open_files; o; o = o->next_open) {
            if (o->node == f->node) f->node->writer = o;
        }
    }
    int rc = f->real->pMethods->xClose(f->real);
    pthread_mutex_unlock(&fv_lock);
    return rc;
}

static int fv_read(sqlite3_file *file, void *buf, int amount, sqlite3_int64 offset) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xRead(f->real, buf, amount, offset);
}

static int fv_write(sqlite3_file *file, const void *buf, int amount, sqlite3_int64 offset) {
    fv_file *f = (fv_file *)file;
    int lie = 0;
    pthread_mutex_lock(&fv_lock);
    fv_global.counters.writes += 1;
    int rc = fv_apply_rule(f, ORDERSYNC_FAULT_ON_WRITE, SQLITE_IOERR_WRITE, &lie);
    if (rc == SQLITE_OK) {
        fv_record(f, offset, amount);
        rc = f->real->pMethods->xWrite(f->real, buf, amount, offset);
    }
    pthread_mutex_unlock(&fv_lock);
    return rc;
}

static int fv_truncate(sqlite3_file *file, sqlite3_int64 size) {
    fv_file *f = (fv_file *)file;
    int lie = 0;
    pthread_mutex_lock(&fv_lock);
    fv_global.counters.truncates += 1;
    int rc = fv_apply_rule(f, ORDERSYNC_FAULT_ON_TRUNCATE, SQLITE_IOERR_TRUNCATE, &lie);
    if (rc == SQLITE_OK) {
        sqlite3_int64 current = 0;
        f->real->pMethods->xFileSize(f->real, &current);
        if (current > size) fv_record(f, size, current - size);
        rc = f->real->pMethods->xTruncate(f->real, size);
    }
    pthread_mutex_unlock(&fv_lock);
    return rc;
}

static int fv_sync(sqlite3_file *file, int flags) {
    fv_file *f = (fv_file *)file;
    int lie = 0;
    pthread_mutex_lock(&fv_lock);
    fv_global.counters.syncs += 1;
    int rc = fv_apply_rule(f, ORDERSYNC_FAULT_ON_SYNC, SQLITE_IOERR_FSYNC, &lie);
    if (rc == SQLITE_OK && !lie) {
        rc = fv_global.skip_real_sync ? SQLITE_OK : f->real->pMethods->xSync(f->real, flags);
        if (rc == SQLITE_OK && f->node) {
            // Everything written so far is on the disk now.
            fv_clear_undo(f->node);
            sqlite3_int64 size = 0;
            f->real->pMethods->xFileSize(f->real, &size);
            f->node->synced_size = size;
            f->node->never_synced = 0;
        }
    }
    pthread_mutex_unlock(&fv_lock);
    return rc;
}

static int fv_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}

static int fv_lock_file(sqlite3_file *file, int level) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xLock(f->real, level);
}

static int fv_unlock_file(sqlite3_file *file, int level) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xUnlock(f->real, level);
}

static int fv_check_reserved(sqlite3_file *file, int *out) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int fv_file_control(sqlite3_file *file, int op, void *arg) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xFileControl(f->real, op, arg);
}

static int fv_sector_size(sqlite3_file *file) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xSectorSize(f->real);
}

static int fv_device_characteristics(sqlite3_file *file) {
    fv_file *f = (fv_file *)file;
    // The unix VFS claims SQLITE_IOCAP_POWERSAFE_OVERWRITE; a torn power cut keeps it true
    // (only sectors inside a write's own range change).
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int fv_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}

static int fv_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    fv_file *f = (fv_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void fv_shm_barrier(sqlite3_file *file) {
    fv_file *f = (fv_file *)file;
    f->real->pMethods->xShmBarrier(f->real);
}

static int fv_shm_unmap(sqlite3_file *file, int delete_flag) {
    fv_file *f = (fv_file *)file;
    pthread_mutex_lock(&fv_lock);
    // A machine without power deletes nothing.
    int dead = f->dead;
    pthread_mutex_unlock(&fv_lock);
    return f->real->pMethods->xShmUnmap(f->real, dead ? 0 : delete_flag);
}

// Version 2: no xFetch, so SQLite never reads through a memory map that a power cut would
// not see.
const sqlite3_io_methods fv_io_methods = {
    2, fv_close, fv_read, fv_write, fv_truncate, fv_sync, fv_file_size, fv_lock_file, fv_unlock_file,
    fv_check_reserved, fv_file_control, fv_sector_size, fv_device_characteristics, fv_shm_map, fv_shm_lock,
    fv_shm_barrier, fv_shm_unmap, NULL, NULL,
};

static int fv_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    fv_file *f = (fv_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    pthread_mutex_lock(&fv_lock);
    if (name && fv_is_off(name)) {
        pthread_mutex_unlock(&fv_lock);
        return SQLITE_CANTOPEN;
    }
    int existed = name && access(name, F_OK) == 0;
    int rc = fv_global.real->xOpen(fv_global.real, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        pthread_mutex_unlock(&fv_lock);
        return rc;
    }
    if (name) {
        fv_node *node = fv_node_for(name);
        if (!existed) {
            fv_clear_undo(node);
            node->never_synced = 1;
            node->synced_size = 0;
        } else if (!node->undo && !node->never_synced) {
            sqlite3_int64 size = 0;
            f->real->pMethods->xFileSize(f->real, &size);
            node->synced_size = size;
        }
        f->node = node;
        if (!node->writer) node->writer = f;
    }
    f->next_open = fv_global.open_files;
    fv_global.open_files = f;
    f->base.pMethods = &fv_io_methods;
    pthread_mutex_unlock(&fv_lock);
    return SQLITE_OK;
}

static int fv_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    pthread_mutex_lock(&fv_lock);
    if (fv_is_off(name)) {
        pthread_mutex_unlock(&fv_lock);
        return SQLITE_OK;
    }
    for (fv_node *n = fv_global.nodes; n; n = n->next) {
        if (strcmp(n->path, name) == 0) {
            fv_clear_undo(n);
            n->never_synced = 0;
            n->synced_size = 0;
        }
    }
    int rc = fv_global.real->xDelete(fv_global.real, name, sync_dir);
    pthread_mutex_unlock(&fv_lock);
    return rc;
}

static int fv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return fv_global.real->xAccess(fv_global.real, name, flags, out);
}

static int fv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    return fv_global.real->xFullPathname(fv_global.real, name, n, out);
}

static void *fv_dl_open(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return fv_global.real->xDlOpen(fv_global.real, name);
}

static void fv_dl_error(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    fv_global.real->xDlError(fv_global.real, n, out);
}

static void (*fv_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return fv_global.real->xDlSym(fv_global.real, handle, symbol);
}

static void fv_dl_close(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    fv_global.real->xDlClose(fv_global.real, handle);
}

static int fv_randomness(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    return fv_global.real->xRandomness(fv_global.real, n, out);
}

static int fv_sleep(sqlite3_vfs *vfs, int micros) {
    (void)vfs;
    return fv_global.real->xSleep(fv_global.real, micros);
}

static int fv_current_time(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return fv_global.real->xCurrentTime(fv_global.real, out);
}

static int fv_get_last_error(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    return fv_global.real->xGetLastError(fv_global.real, n, out);
}

static int fv_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return fv_global.real->xCurrentTimeInt64(fv_global.real, out);
}

static sqlite3_vfs fv_vfs = {
    2, 0, 0, NULL, "ordersync-fault", NULL, fv_open, fv_delete, fv_access, fv_full_pathname, fv_dl_open,
    fv_dl_error, fv_dl_sym, fv_dl_close, fv_randomness, fv_sleep, fv_current_time, fv_get_last_error,
    fv_current_time_int64, NULL, NULL, NULL,
};

int ordersync_fault_vfs_install(void) {
    pthread_mutex_lock(&fv_lock);
    if (!fv_global.real) {
        // sqlite3_vfs_find initializes SQLite, after which it takes no process-wide setting: the
        // one the store makes before its first connection (OrderStore's
        // `SQLiteConnection.configured`, no memory statistics) is made here first, so a process
        // that installs this VFS before opening a store runs SQLite as the store does. SQLITE_MISUSE
        // (SQLite already initialized) changes nothing.
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        fv_global.real = sqlite3_vfs_find("unix");
        if (!fv_global.real) {
            pthread_mutex_unlock(&fv_lock);
            return SQLITE_ERROR;
        }
        fv_vfs.szOsFile = (int)sizeof(fv_file) + fv_global.real->szOsFile;
        fv_vfs.mxPathname = fv_global.real->mxPathname;
    }
    pthread_mutex_unlock(&fv_lock);
    // "The same VFS can be registered multiple times without injury. To make an existing VFS
    // into the default VFS, register it again with the makeDflt flag set."
    return sqlite3_vfs_register(&fv_vfs, 1);
}

void ordersync_fault_vfs_uninstall(void) {
    sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs) sqlite3_vfs_register(unix_vfs, 1);
}
