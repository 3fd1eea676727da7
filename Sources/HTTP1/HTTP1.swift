// HTTP1 module
