// Discovery module
