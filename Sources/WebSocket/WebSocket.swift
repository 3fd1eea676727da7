// WebSocket module
