#define _GNU_SOURCE
#include <sys/socket.h>
#include "CLinux.h"

int CLinux_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    return accept4(sockfd, addr, addrlen, flags);
}
