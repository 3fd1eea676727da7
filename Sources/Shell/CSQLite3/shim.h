#ifndef ORDERSYNC_CSQLITE3_SHIM_H
#define ORDERSYNC_CSQLITE3_SHIM_H
#include <sqlite3.h>
// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type ordersync_sqlite_transient(void) { return SQLITE_TRANSIENT; }
// "SQLITE_CONFIG_MEMSTATUS ... enables or disables the collection of memory allocation
// statistics. When memory allocation statistics are disabled, the following SQLite interfaces
// become non-operational: sqlite3_hard_heap_limit64(), sqlite3_memory_used(),
// sqlite3_memory_highwater(), sqlite3_soft_heap_limit64(), sqlite3_status64()". OrderSync uses
// none of them; with statistics on (the default) every SQLite allocation and free takes a
// process-wide mutex. sqlite3_config is variadic (Swift cannot call it) and must run before
// sqlite3_initialize(): afterwards it returns SQLITE_MISUSE and changes nothing.
static inline int ordersync_sqlite_configure(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
#endif
