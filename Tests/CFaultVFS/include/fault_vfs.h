#ifndef ORDERSYNC_FAULT_VFS_H
#define ORDERSYNC_FAULT_VFS_H
// A fault-injecting SQLite VFS for tests (never linked into the product), after SQLite's own
// crash tests (src/test6.c): it wraps the default "unix" VFS, keeps for every file the writes
// made since that file's last xSync (an undo log of pre-images), and at a simulated power cut
// drops them all or tears them (keeps a seeded subset of 512-byte sectors). It can also make
// chosen calls fail with SQLITE_IOERR (EIO) or SQLITE_FULL (ENOSPC), or make a sync lie.
//
// Everything is keyed by path prefix, so that one simulated machine (a directory) loses power
// and the others do not. Thread-safe: every entry point takes one mutex.
#include <stdint.h>

/// What an armed rule does to the call it matches.
typedef enum {
    /// The call fails with SQLITE_IOERR_WRITE / _FSYNC / _TRUNCATE (errno EIO).
    ORDERSYNC_FAULT_EIO = 1,
    /// The call fails with SQLITE_FULL (errno ENOSPC).
    ORDERSYNC_FAULT_ENOSPC = 2,
    /// An xSync returns SQLITE_OK without making anything durable (a disk cache that lies).
    ORDERSYNC_FAULT_LYING_SYNC = 3,
    /// The power goes off just before the call (drop mode), which then fails with EIO.
    ORDERSYNC_FAULT_POWER_CUT_DROP = 4,
    /// The power goes off just before the call (tear mode), which then fails with EIO.
    ORDERSYNC_FAULT_POWER_CUT_TEAR = 5,
} ordersync_fault_kind;

/// The calls a rule counts.
enum {
    ORDERSYNC_FAULT_ON_WRITE = 1,
    ORDERSYNC_FAULT_ON_SYNC = 2,
    ORDERSYNC_FAULT_ON_TRUNCATE = 4,
};

/// What happens to unsynced writes at a power cut.
typedef enum {
    /// Every write since the file's last sync is undone.
    ORDERSYNC_POWER_DROP = 0,
    /// Each 512-byte sector written since the last sync keeps its new content or gets its old
    /// one back, chosen by the seed (SQLite's "torn page").
    ORDERSYNC_POWER_TEAR = 1,
    /// Not a power cut: the process dies and the kernel's page cache survives (SIGKILL); its
    /// handles are dead, nothing is undone.
    ORDERSYNC_PROCESS_KILL = 2,
} ordersync_power_mode;

/// What the VFS has seen and done since the last reset.
typedef struct {
    int64_t writes;
    int64_t syncs;
    int64_t truncates;
    /// Calls failed or lied about by an armed rule.
    int64_t faults_injected;
    int64_t power_cuts;
    /// Process deaths (ORDERSYNC_PROCESS_KILL).
    int64_t kills;
    /// Files whose unsynced writes a power cut undid (wholly or in part).
    int64_t files_reverted;
    /// Bytes a power cut put back to their synced content.
    int64_t bytes_reverted;
    /// Calls refused because their file handle belongs to a machine whose power went off.
    int64_t dead_calls;
} ordersync_fault_vfs_counters;

/// Registers the VFS under the name "ordersync-fault" and makes it the default, so every
/// `sqlite3_open_v2` without a VFS name uses it. Idempotent; returns an SQLite result code.
int ordersync_fault_vfs_install(void);

/// Makes "unix" the default VFS again (the fault VFS stays registered, and files opened
/// through it keep using it).
void ordersync_fault_vfs_uninstall(void);

/// Forgets every rule, undo log and counter, and turns every machine back on. Undo logs of
/// open files are cleared too (what they held counts as synced from now on).
void ordersync_fault_vfs_reset(void);

/// Arms a rule: the `nth` (1 = the next) call among `ops` on a file whose path starts with
/// `prefix` gets `kind`, and so do the `count - 1` matching calls after it (count < 0: every
/// one after it). Returns the rule's number (rules are checked in arming order).
int ordersync_fault_vfs_arm(const char *prefix, int ops, int nth, int kind, int count);

/// Removes every armed rule.
void ordersync_fault_vfs_disarm(void);

/// When `skip` is nonzero, a sync does not call fsync (the VFS still counts the file as
/// synced): what the tests check is the VFS's model of the disk, and fsync is slow.
void ordersync_fault_vfs_skip_real_sync(int skip);

/// The seed that decides which sectors survive a torn power cut.
void ordersync_fault_vfs_set_seed(uint64_t seed);

/// Cuts the power of the machine whose files start with `prefix` (`mode`: drop or tear): the
/// unsynced writes of its files are dropped or torn, files created and never synced lose their
/// content, and every handle open on them is dead (writes, syncs and truncates fail with EIO;
/// its WAL and -shm are not deleted on close). With ORDERSYNC_PROCESS_KILL only the handles die
/// and nothing is undone. Until `ordersync_fault_vfs_power_on`, files under `prefix` cannot be
/// opened and deletes of them do nothing. Returns the number of files reverted.
int ordersync_fault_vfs_power_cut(const char *prefix, int mode);

/// Turns the machine back on: deletes the -shm file of every database under `prefix` (shared
/// memory does not survive a power cut). Returns how many dead handles are still open there
/// (they share SQLite's in-process lock and shared-memory state with new opens: close them
/// first, a result above zero is a test bug).
int ordersync_fault_vfs_power_on(const char *prefix);

/// Bytes written under `prefix` since their file's last sync (what a power cut now could lose).
int64_t ordersync_fault_vfs_unsynced_bytes(const char *prefix);

/// The counters since the last reset.
ordersync_fault_vfs_counters ordersync_fault_vfs_get_counters(void);

#endif
