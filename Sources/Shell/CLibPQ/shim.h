#ifndef ORDERSYNC_CLIBPQ_SHIM_H
#define ORDERSYNC_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
