/// A handshake pattern (Noise revision 34, section 7): the pre-messages and the token sequence
/// of each handshake message, with any `psk` modifiers applied (section 9.2).
///
/// Messages alternate: the initiator writes messages 0, 2, 4..., the responder 1, 3, 5...
public struct NoiseHandshakePattern: Equatable, Sendable {
    /// A message pattern token (section 7.1 and 9.2).
    public enum Token: String, Equatable, Sendable {
        case e, s, ee, es, se, ss, psk
    }

    /// The name as in a protocol name, modifiers included (`XXpsk3`, `NNpsk0+psk2`).
    public let name: String
    /// Tokens of the initiator's pre-message (`-> s` before `...`): keys the responder knows.
    public let initiatorPreMessage: [Token]
    /// Tokens of the responder's pre-message (`<- s` before `...`): keys the initiator knows.
    public let responderPreMessage: [Token]
    /// The token sequence of each handshake message, in order.
    public let messages: [[Token]]

    /// Creates a pattern from its parts; `named(_:)` is the usual way to get one.
    public init(name: String, initiatorPreMessage: [Token], responderPreMessage: [Token], messages: [[Token]]) {
        self.name = name
        self.initiatorPreMessage = initiatorPreMessage
        self.responderPreMessage = responderPreMessage
        self.messages = messages
    }

    /// "One-way handshake patterns" (7.4): a single message from the initiator, after which only
    /// the initiator sends.
    public var isOneWay: Bool { messages.count == 1 }

    /// Whether any `psk` token appears: then every `e` token also calls `MixKey(e.public_key)`
    /// (9.2: "the e token in a PSK handshake ... also calls MixKey(e.public_key)").
    public var usesPreSharedKeys: Bool { preSharedKeyCount > 0 }

    /// How many `psk` tokens the handshake has (one pre-shared key is consumed by each).
    public var preSharedKeyCount: Int { messages.reduce(0) { $0 + $1.filter { $0 == .psk }.count } }

    /// Whether the initiator sends (or has pre-sent) a static key, so needs a local static key.
    var initiatorNeedsStatic: Bool {
        initiatorPreMessage.contains(.s) || messages.indices.contains { $0 % 2 == 0 && messages[$0].contains(.s) }
    }

    /// Whether the responder sends (or has pre-sent) a static key.
    var responderNeedsStatic: Bool {
        responderPreMessage.contains(.s) || messages.indices.contains { $0 % 2 == 1 && messages[$0].contains(.s) }
    }

    /// The pattern called `name`: a base pattern from section 7 (one-way, fundamental or
    /// deferred) with optional `psk` modifiers, such as `IK`, `XXpsk3` or `NNpsk0+psk2`.
    ///
    /// Section 9.2: "A "psk0" modifier is only allowed on the first message pattern, and places a
    /// psk token at the beginning of the first handshake message. The "psk1" modifier places a
    /// psk token at the end of the first handshake message. ... "psk2" at the end of the second
    /// handshake message ..." and so on.
    public static func named(_ name: String) throws(NoiseError) -> NoiseHandshakePattern {
        let baseName: Substring
        let modifiers: [Substring]
        if let pskStart = name.firstRange(of: "psk") {
            baseName = name[..<pskStart.lowerBound]
            modifiers = name[pskStart.lowerBound...].split(separator: "+", omittingEmptySubsequences: false)
        } else {
            baseName = Substring(name)
            modifiers = []
        }
        guard let base = baseTable[String(baseName)] else {
            throw NoiseError(.unsupportedProtocol, "unknown handshake pattern \(name)")
        }
        var messages = base.messages
        var seen: Set<Int> = []
        for modifier in modifiers {
            guard modifier.hasPrefix("psk"), let position = Int(modifier.dropFirst(3)),
                String(position) == modifier.dropFirst(3), position <= messages.count,
                seen.insert(position).inserted
            else {
                throw NoiseError(.unsupportedProtocol, "invalid modifier \(modifier) in pattern \(name)")
            }
            if position == 0 {
                messages[0].insert(.psk, at: 0)
            } else {
                messages[position - 1].append(.psk)
            }
        }
        return NoiseHandshakePattern(
            name: name, initiatorPreMessage: base.initiatorPreMessage,
            responderPreMessage: base.responderPreMessage, messages: messages)
    }
}
