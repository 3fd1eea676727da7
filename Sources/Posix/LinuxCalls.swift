import Glibc

/// The Linux-only calls (`epoll`, `eventfd`, `signalfd`, `accept4`) that the `Glibc` module does not
/// import, bound to the C library's own symbols with their C calling convention.
///
/// The constants and the `epoll_event` layout are the kernel ABI from `<sys/epoll.h>`,
/// `<sys/eventfd.h>` and `<sys/signalfd.h>`.
enum LinuxCalls {
    private static let library = dlopen(nil, RTLD_NOW)

    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let pointer = dlsym(library, name) else {
            preconditionFailure("the C library does not export \(name)")
        }
        return unsafeBitCast(pointer, to: type)
    }

    /// `int epoll_create1(int flags)`
    static let epollCreate1 = symbol("epoll_create1", as: (@convention(c) (Int32) -> Int32).self)
    /// `int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)`
    static let epollCtl = symbol(
        "epoll_ctl", as: (@convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32).self)
    /// `int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)`
    static let epollWait = symbol(
        "epoll_wait", as: (@convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32).self)
    /// `int eventfd(unsigned int initval, int flags)`
    static let eventfd = symbol("eventfd", as: (@convention(c) (UInt32, Int32) -> Int32).self)
    /// `int signalfd(int fd, const sigset_t *mask, int flags)`
    static let signalfd = symbol(
        "signalfd", as: (@convention(c) (Int32, UnsafePointer<sigset_t>?, Int32) -> Int32).self)

    /// `int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags)`
    static let accept4 = symbol(
        "accept4",
        as: (@convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32).self)

    static let EPOLL_CLOEXEC = O_CLOEXEC
    static let EPOLL_CTL_ADD: Int32 = 1
    static let EPOLL_CTL_DEL: Int32 = 2
    static let EPOLL_CTL_MOD: Int32 = 3
    static let EPOLLIN: UInt32 = 0x001
    static let EPOLLOUT: UInt32 = 0x004
    static let EPOLLERR: UInt32 = 0x008
    static let EPOLLHUP: UInt32 = 0x010
    static let EPOLLRDHUP: UInt32 = 0x2000
    static let EFD_CLOEXEC = O_CLOEXEC
    static let EFD_NONBLOCK = O_NONBLOCK
    static let SFD_CLOEXEC = O_CLOEXEC
    static let SFD_NONBLOCK = O_NONBLOCK
    /// `sizeof(struct signalfd_siginfo)`; `ssi_signo` is its first field (`uint32_t`).
    static let signalInfoSize = 128

    /// `struct epoll_event { uint32_t events; epoll_data_t data; }`, which glibc declares
    /// `__attribute__((packed))` on x86-64 only (12 bytes there, 16 elsewhere).
    enum EpollEvent {
        #if arch(x86_64)
        static let stride = 12
        static let dataOffset = 4
        #else
        static let stride = 16
        static let dataOffset = 8
        #endif

        static func store(events: UInt32, data: UInt64, at base: UnsafeMutableRawPointer) {
            base.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            base.storeBytes(of: data, toByteOffset: dataOffset, as: UInt64.self)
        }

        static func events(at base: UnsafeRawPointer) -> UInt32 {
            base.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
        }

        static func data(at base: UnsafeRawPointer) -> UInt64 {
            base.loadUnaligned(fromByteOffset: dataOffset, as: UInt64.self)
        }
    }
}
