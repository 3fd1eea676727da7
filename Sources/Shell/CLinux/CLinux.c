#define _GNU_SOURCE
#include <sys/socket.h>
#include "CLinux.h"

int CLinux_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    return accept4(sockfd, addr, addrlen, flags);
}

int CLinux_peer_credentials(int sockfd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    int result = getsockopt(sockfd, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
    if (result == 0) {
        *pid = credentials.pid;
        *uid = credentials.uid;
        *gid = credentials.gid;
    }
    return result;
}
