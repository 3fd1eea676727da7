#ifndef ORDERSYNC_CLINUX_H
#define ORDERSYNC_CLINUX_H

// The Linux-only calls the event loop uses: epoll, eventfd, signalfd and accept4, with the
// kernel's own structures (`struct epoll_event`, `struct signalfd_siginfo`).

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

// `accept4` is a GNU extension: declared in <sys/socket.h> only with _GNU_SOURCE, which the
// C library module Swift imports is not built with. CLinux.c defines _GNU_SOURCE and forwards.
int CLinux_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

// `SO_PEERCRED` fills a `struct ucred`, which <sys/socket.h> also declares only with
// _GNU_SOURCE: reads the peer's pid, uid and gid of a connected Unix socket. Returns what
// getsockopt returns (-1 and errno on failure).
int CLinux_peer_credentials(int sockfd, int32_t *pid, uint32_t *uid, uint32_t *gid);

// ThreadSanitizer cannot see the lock of Swift's `Synchronization.Mutex` on Linux (a futex in
// the uninstrumented standard library), so it reports the state a `Mutex` guards as a race. The
// loop's own mutexes announce their lock to it with these: acquire right after taking the lock,
// release right before giving it back. Without ThreadSanitizer they do nothing.
void CLinux_sanitizer_acquire(const void *token);
void CLinux_sanitizer_release(const void *token);

// The epoll flags are members of the C enum `EPOLL_EVENTS`; as plain constants they read the
// same on every architecture.
static const uint32_t CLinux_EPOLLIN = EPOLLIN;
static const uint32_t CLinux_EPOLLOUT = EPOLLOUT;
static const uint32_t CLinux_EPOLLERR = EPOLLERR;
static const uint32_t CLinux_EPOLLHUP = EPOLLHUP;
static const uint32_t CLinux_EPOLLRDHUP = EPOLLRDHUP;

static const int CLinux_EPOLL_CLOEXEC = EPOLL_CLOEXEC;
static const int CLinux_EFD_CLOEXEC = EFD_CLOEXEC;
static const int CLinux_EFD_NONBLOCK = EFD_NONBLOCK;
static const int CLinux_SFD_CLOEXEC = SFD_CLOEXEC;
static const int CLinux_SFD_NONBLOCK = SFD_NONBLOCK;

#endif
