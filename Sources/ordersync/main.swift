print("ordersync")
