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

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CLINUX_THREAD_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CLINUX_THREAD_SANITIZER 1
#endif

#ifdef CLINUX_THREAD_SANITIZER
// The ThreadSanitizer runtime's annotation interface (compiler-rt tsan_interface.h).
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#endif

void CLinux_sanitizer_acquire(const void *token) {
#ifdef CLINUX_THREAD_SANITIZER
    __tsan_acquire((void *)token);
#else
    (void)token;
#endif
}

void CLinux_sanitizer_release(const void *token) {
#ifdef CLINUX_THREAD_SANITIZER
    __tsan_release((void *)token);
#else
    (void)token;
#endif
}
