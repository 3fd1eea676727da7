// SyncCore module
