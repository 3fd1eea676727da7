// Posix module
