import Glibc

/// Name resolution kept off the event loop: `getaddrinfo` blocks for as long as the DNS server
/// takes, so a host name is resolved on a thread of its own and only numeric addresses reach
/// `TCPSocket.connect` on the loop.
public enum HostResolver {
    /// True when `host` is an IPv4 or IPv6 literal (no lookup needed).
    public static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Resolves `host` on a new thread and calls `completion` on `loop` with its numeric
    /// addresses, in the resolver's order, or the error. `completion` travels to the resolver
    /// thread and back, so it is `@Sendable`; it runs on the loop thread.
    public static func resolve(
        host: String, port: UInt16, on loop: EventLoop,
        completion: @escaping @Sendable (Result<[String], PosixError>) -> Void
    ) {
        let box = ResolveJob(host: host, port: port)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(JobContext(job: box, loop: loop, completion: completion)).toOpaque()
        let started = pthread_create(
            &thread, nil,
            { raw in
                let context = Unmanaged<JobContext>.fromOpaque(raw!).takeRetainedValue()
                let result: Result<[String], PosixError>
                do {
                    result = .success(try SocketAddress.resolve(host: context.job.host, port: context.job.port, passive: false).map(\.host))
                } catch let e as PosixError {
                    result = .failure(e)
                } catch {
                    result = .failure(PosixError(call: "getaddrinfo", errno: EINVAL, detail: "\(error)"))
                }
                let completion = context.completion
                context.loop.execute { completion(result) }
                return nil
            }, context)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<JobContext>.fromOpaque(context).release()
            loop.execute { completion(.failure(PosixError(call: "pthread_create", errno: started))) }
        }
    }

    private struct ResolveJob: Sendable {
        let host: String
        let port: UInt16
    }

    /// What the resolver thread receives: handed over whole through `pthread_create`.
    private final class JobContext: Sendable {
        let job: ResolveJob
        let loop: EventLoop
        let completion: @Sendable (Result<[String], PosixError>) -> Void

        init(
            job: ResolveJob, loop: EventLoop,
            completion: @escaping @Sendable (Result<[String], PosixError>) -> Void
        ) {
            self.job = job
            self.loop = loop
            self.completion = completion
        }
    }
}
