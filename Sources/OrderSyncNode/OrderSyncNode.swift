// OrderSyncNode module
