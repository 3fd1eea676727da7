// OrderStore module
