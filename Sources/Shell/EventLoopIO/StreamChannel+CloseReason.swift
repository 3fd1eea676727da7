extension StreamChannel {
    /// Why a channel closed.
    public enum CloseReason: Equatable, CustomStringConvertible {
        /// The peer ended its stream (and anything still pending was flushed or failed).
        case endOfFile
        /// A read, write or connect failed; `errno` is in the error.
        case error(PosixError)
        /// ``StreamChannel/close()`` was called, or ``StreamChannel/closeAfterFlush()`` finished.
        case localClose
        /// More than ``StreamChannel/maxPendingBytes`` were waiting to be sent.
        case sendBufferOverflow

        /// Text for logs.
        public var description: String {
            switch self {
            case .endOfFile: return "end of stream"
            case .error(let error): return "\(error)"
            case .localClose: return "closed locally"
            case .sendBufferOverflow: return "send buffer overflow (peer not reading)"
            }
        }
    }
}
