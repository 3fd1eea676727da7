/// A value that belongs to one ``EventLoop``, carried through `@Sendable` closures (to
/// ``EventLoop/execute(_:)``, a ``Waker``, a callback from another library's thread) and
/// unwrapped again on the loop.
///
/// A node or a channel is not `Sendable`, so a closure that crosses threads cannot capture it
/// directly; wrapped in a `LoopBound` it can, and ``value`` traps (in every build) when read off
/// the loop's thread while the loop runs, so the value itself never changes threads:
///
/// ```swift
/// let node = LoopBound(self, loop: loop)
/// discovery = AvahiDiscovery { event in loop.execute { node.value.handle(event) } }
/// ```
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: the wrapped value is reached only through `value`, which checks that
    // the caller may use the loop's state (its thread, or the owner while the loop is not
    // running); the wrapper itself is immutable.
    private let wrapped: Value
    /// The loop the value belongs to.
    public let loop: EventLoop

    /// Wraps `value`, which belongs to `loop`. Call it where `value` may be used: on the loop.
    public init(_ value: Value, loop: EventLoop) {
        loop.preconditionInEventLoop()
        self.wrapped = value
        self.loop = loop
    }

    /// The wrapped value. Traps when called off the loop's thread while the loop runs.
    public var value: Value {
        loop.preconditionInEventLoop()
        return wrapped
    }
}
