/// Accepts connections from a listener registered on an ``EventLoop``, backing off when the
/// process runs out of descriptors instead of spinning on a listener that stays readable.
///
/// The acceptor stays registered (and alive) until ``close()``.
public final class Acceptor {
    /// The loop the listener is registered on.
    public let loop: EventLoop
    /// Called with every accepted connection; the callee owns the socket.
    public var onAccept: (AcceptedSocket) -> Void
    /// Called when `accept` fails; accepting pauses for ``backoff`` afterwards.
    public var onError: ((PosixError) -> Void)?
    /// How long to stop accepting after an error such as `EMFILE` (default 100 ms).
    public var backoff: Duration = .milliseconds(100)
    /// The most connections accepted per readiness notification, so one busy listener cannot
    /// starve the other descriptors of the loop.
    public var maxAcceptsPerWakeup = 64

    private let listener: any ListeningSocket
    private let descriptor: Int32
    private var backoffTimer: TimerHandle?
    private var closed = false

    /// Registers `listener` on `loop` and starts accepting.
    public init(
        listener: any ListeningSocket, loop: EventLoop,
        onAccept: @escaping (AcceptedSocket) -> Void
    ) throws {
        self.listener = listener
        self.loop = loop
        self.onAccept = onAccept
        self.descriptor = listener.descriptor
        loop.assertInEventLoop()
        try loop.register(fd: descriptor, interest: .readable) { _ in
            self.acceptPending()
        }
    }

    /// `true` while accepting is paused after an error.
    public var isBackingOff: Bool { backoffTimer != nil }

    private func acceptPending() {
        for _ in 0..<max(1, maxAcceptsPerWakeup) {
            guard !closed else { return }
            do {
                guard let accepted = try listener.accept() else {
                    return
                }
                onAccept(accepted)
            } catch let error as PosixError {
                onError?(error)
                pause()
                return
            } catch {
                preconditionFailure("unexpected error \(error)")
            }
        }
    }

    private func pause() {
        guard !closed, backoffTimer == nil else { return }
        try? loop.setInterest(fd: descriptor, [])
        backoffTimer = loop.schedule(after: backoff) { [self] in
            backoffTimer = nil
            guard !closed else { return }
            do {
                try loop.setInterest(fd: descriptor, .readable)
            } catch let error as PosixError {
                onError?(error)
                pause()
            } catch {
                preconditionFailure("unexpected error \(error)")
            }
        }
    }

    /// Stops accepting, unregisters and closes the listener.
    public func close() {
        loop.assertInEventLoop()
        guard !closed else { return }
        closed = true
        if let backoffTimer {
            loop.cancel(backoffTimer)
            self.backoffTimer = nil
        }
        loop.unregister(fd: descriptor)
        listener.close()
    }
}
