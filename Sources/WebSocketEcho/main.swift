print("ordersync-wsecho: not built yet")
