// The control side of the fault VFS: rules, power cuts, counters (see fault_vfs.h).
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fault_vfs_internal.h"

fv_state fv_global;
pthread_mutex_t fv_lock = PTHREAD_MUTEX_INITIALIZER;

int fv_has_prefix(const char *path, const char *prefix) {
    return path && prefix && strncmp(path, prefix, strlen(prefix)) == 0;
}

int fv_is_off(const char *path) {
    for (fv_off *o = fv_global.off; o; o = o->next) {
        if (fv_has_prefix(path, o->prefix)) return 1;
    }
    return 0;
}

fv_node *fv_node_for(const char *path) {
    for (fv_node *n = fv_global.nodes; n; n = n->next) {
        if (strcmp(n->path, path) == 0) return n;
    }
    fv_node *n = calloc(1, sizeof *n);
    n->path = strdup(path);
    n->next = fv_global.nodes;
    fv_global.nodes = n;
    return n;
}

void fv_clear_undo(fv_node *node) {
    fv_undo *u = node->undo;
    while (u) {
        fv_undo *next = u->next;
        free(u->before);
        free(u);
        u = next;
    }
    node->undo = NULL;
}

fv_rule *fv_match_rule(const char *path, int op) {
    for (fv_rule *r = fv_global.rules; r; r = r->next) {
        if (r->remaining == 0 || !(r->ops & op) || !fv_has_prefix(path, r->prefix)) continue;
        if (r->countdown > 1) {
            r->countdown -= 1;
            continue;
        }
        if (r->remaining > 0) r->remaining -= 1;
        return r;
    }
    return NULL;
}

/// A 64-bit mix (splitmix64's finaliser): which sectors of a torn write survive.
static uint64_t fv_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t fv_hash_path(const char *path) {
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = path; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/// Puts back what `u` replaced, wholly (drop) or sector by sector as the seed chooses (tear).
static int64_t fv_restore(sqlite3_file *real, const fv_undo *u, int mode, uint64_t salt) {
    const int64_t sector = 512;
    int64_t restored = 0;
    for (int64_t at = u->offset; at < u->offset + u->length;) {
        int64_t end = (at / sector + 1) * sector;
        if (end > u->offset + u->length) end = u->offset + u->length;
        int keep_new = mode == ORDERSYNC_POWER_TEAR && (fv_mix(salt ^ (uint64_t)(at / sector)) & 1);
        if (!keep_new) {
            real->pMethods->xWrite(real, u->before + (at - u->offset), (int)(end - at), at);
            restored += end - at;
        }
        at = end;
    }
    return restored;
}

int fv_power_cut_locked(const char *prefix, int mode) {
    int reverted = 0;
    if (mode == ORDERSYNC_PROCESS_KILL) {
        fv_global.counters.kills += 1;
    } else {
        fv_global.counters.power_cuts += 1;
    }
    for (fv_file *f = fv_global.open_files; f; f = f->next_open) {
        if (f->node && fv_has_prefix(f->node->path, prefix)) f->dead = 1;
    }
    for (fv_node *n = fv_global.nodes; n; n = n->next) {
        if (mode == ORDERSYNC_PROCESS_KILL) break;
        if (!fv_has_prefix(n->path, prefix) || (!n->undo && !n->never_synced)) continue;
        sqlite3_file *real = n->writer ? n->writer->real : NULL;
        if (!real) {
            // Closed since it was written: reopen it through the real VFS to put it back.
            real = calloc(1, (size_t)fv_global.real->szOsFile);
            int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_MAIN_DB;
            if (fv_global.real->xOpen(fv_global.real, n->path, real, flags, &flags) != SQLITE_OK) {
                if (real->pMethods) real->pMethods->xClose(real);
                free(real);
                fv_clear_undo(n);
                continue;
            }
        }
        uint64_t salt = fv_mix(fv_global.seed ^ fv_hash_path(n->path));
        // Newest first: the oldest pre-image of a byte is what ends up on disk.
        for (fv_undo *u = n->undo; u; u = u->next) {
            fv_global.counters.bytes_reverted += fv_restore(real, u, mode, salt);
        }
        sqlite3_int64 size = 0;
        real->pMethods->xFileSize(real, &size);
        if (n->never_synced) {
            // The file's content never reached the disk.
            fv_global.counters.bytes_reverted += size;
            real->pMethods->xTruncate(real, 0);
        } else if (mode == ORDERSYNC_POWER_DROP && size != n->synced_size) {
            real->pMethods->xTruncate(real, n->synced_size);
        }
        if (!n->writer) {
            real->pMethods->xClose(real);
            free(real);
        }
        fv_clear_undo(n);
        reverted += 1;
    }
    fv_global.counters.files_reverted += reverted;
    fv_off *o = calloc(1, sizeof *o);
    o->prefix = strdup(prefix);
    o->next = fv_global.off;
    fv_global.off = o;
    return reverted;
}

int ordersync_fault_vfs_power_cut(const char *prefix, int mode) {
    pthread_mutex_lock(&fv_lock);
    int reverted = fv_power_cut_locked(prefix, mode);
    pthread_mutex_unlock(&fv_lock);
    return reverted;
}

int ordersync_fault_vfs_power_on(const char *prefix) {
    pthread_mutex_lock(&fv_lock);
    for (fv_off **o = &fv_global.off; *o;) {
        if (strcmp((*o)->prefix, prefix) == 0) {
            fv_off *gone = *o;
            *o = gone->next;
            free(gone->prefix);
            free(gone);
        } else {
            o = &(*o)->next;
        }
    }
    for (fv_node *n = fv_global.nodes; n; n = n->next) {
        if (!fv_has_prefix(n->path, prefix)) continue;
        size_t len = strlen(n->path);
        char *shm = malloc(len + 5);
        memcpy(shm, n->path, len);
        memcpy(shm + len, "-shm", 5);
        unlink(shm);
        free(shm);
    }
    int still_open = 0;
    for (fv_file *f = fv_global.open_files; f; f = f->next_open) {
        if (f->dead && f->node && fv_has_prefix(f->node->path, prefix)) still_open += 1;
    }
    pthread_mutex_unlock(&fv_lock);
    return still_open;
}

int ordersync_fault_vfs_arm(const char *prefix, int ops, int nth, int kind, int count) {
    pthread_mutex_lock(&fv_lock);
    fv_rule *r = calloc(1, sizeof *r);
    r->prefix = strdup(prefix);
    r->ops = ops;
    r->countdown = nth < 1 ? 1 : nth;
    r->kind = kind;
    r->remaining = count == 0 ? 1 : count;
    int number = 1;
    fv_rule **tail = &fv_global.rules;
    while (*tail) {
        tail = &(*tail)->next;
        number += 1;
    }
    *tail = r;
    pthread_mutex_unlock(&fv_lock);
    return number;
}

static void fv_disarm_locked(void) {
    fv_rule *r = fv_global.rules;
    while (r) {
        fv_rule *next = r->next;
        free(r->prefix);
        free(r);
        r = next;
    }
    fv_global.rules = NULL;
}

void ordersync_fault_vfs_disarm(void) {
    pthread_mutex_lock(&fv_lock);
    fv_disarm_locked();
    pthread_mutex_unlock(&fv_lock);
}

void ordersync_fault_vfs_skip_real_sync(int skip) {
    pthread_mutex_lock(&fv_lock);
    fv_global.skip_real_sync = skip;
    pthread_mutex_unlock(&fv_lock);
}

void ordersync_fault_vfs_set_seed(uint64_t seed) {
    pthread_mutex_lock(&fv_lock);
    fv_global.seed = seed;
    pthread_mutex_unlock(&fv_lock);
}

void ordersync_fault_vfs_reset(void) {
    pthread_mutex_lock(&fv_lock);
    fv_disarm_locked();
    while (fv_global.off) {
        fv_off *next = fv_global.off->next;
        free(fv_global.off->prefix);
        free(fv_global.off);
        fv_global.off = next;
    }
    // Nodes of open files stay (their handles point at them); the others go.
    for (fv_node **n = &fv_global.nodes; *n;) {
        fv_node *node = *n;
        fv_clear_undo(node);
        node->never_synced = 0;
        if (node->writer) {
            sqlite3_int64 size = 0;
            node->writer->real->pMethods->xFileSize(node->writer->real, &size);
            node->synced_size = size;
            n = &node->next;
        } else {
            *n = node->next;
            free(node->path);
            free(node);
        }
    }
    memset(&fv_global.counters, 0, sizeof fv_global.counters);
    fv_global.skip_real_sync = 0;
    pthread_mutex_unlock(&fv_lock);
}

int64_t ordersync_fault_vfs_unsynced_bytes(const char *prefix) {
    pthread_mutex_lock(&fv_lock);
    int64_t total = 0;
    for (fv_node *n = fv_global.nodes; n; n = n->next) {
        if (!fv_has_prefix(n->path, prefix)) continue;
        for (fv_undo *u = n->undo; u; u = u->next) total += u->length;
    }
    pthread_mutex_unlock(&fv_lock);
    return total;
}

ordersync_fault_vfs_counters ordersync_fault_vfs_get_counters(void) {
    pthread_mutex_lock(&fv_lock);
    ordersync_fault_vfs_counters c = fv_global.counters;
    pthread_mutex_unlock(&fv_lock);
    return c;
}
