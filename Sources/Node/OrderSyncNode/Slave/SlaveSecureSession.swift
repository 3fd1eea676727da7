import Foundation
import JSON
import Noise
import SecureLink

/// How a slave authenticates to its master on one link (Docs/SECURITY.md).
enum MasterCredential: Equatable {
    /// Pairing with a code (`ordersync.pair.v1`, Noise XXpsk3): the master's key is learnt.
    case pairing(PairingCode)
    /// Every later link (`ordersync.ik.v1`, Noise IK) to the master holding `masterKey`.
    case known(masterKey: [UInt8])

    /// The one WebSocket subprotocol the slave offers.
    var subprotocol: String {
        switch self {
        case .pairing: return SecureLinkSubprotocol.pairing
        case .known: return SecureLinkSubprotocol.known
        }
    }
}

/// What the master said of itself in the handshake, and the static key it proved it holds.
struct MasterGreeting: Equatable {
    /// The master's node id (checked to be its key's).
    var masterId: String
    /// The store it serves.
    var store: String?
    /// Its 32-byte static public key.
    var publicKey: [UInt8]
}

/// The slave's end of one secure link: a `SecureLink` and what the slave makes of its events.
/// Pure: binary WebSocket messages in, outputs out; `MasterLink` moves the bytes.
///
/// Nothing from the master reaches the engine before the link is secured: in known mode once
/// the master's IK answer proved the trusted key, in pairing mode once the master's `paired`
/// control message decrypted (which proves it held the code). Any failure ends the session:
/// the caller closes the link (1008) and nothing of the failing message is used.
struct SlaveSecureSession {
    /// What the caller does, in order.
    enum Output: Equatable {
        /// A binary WebSocket message to send.
        case send([UInt8])
        /// Pairing only, just before `.secured`: the master proved the code; trust its key now.
        case paired(MasterGreeting)
        /// The link is secured: the engine may start (hello, snapshot, operations).
        case secured(MasterGreeting)
        /// One sync message from the master (UTF-8 JSON bytes, checked), for the engine.
        case message([UInt8])
        /// The master handed its trust over to a new static key (a `masterKey` control message
        /// authenticated by the current session): `publicKey` is 32 bytes and `masterId` its id.
        case masterKeyHandover(masterId: String, publicKey: [UInt8])
        /// The link failed; close it (1008). Nothing else follows.
        case failed(Failure)
    }

    /// Why a session failed.
    struct Failure: Error, Equatable, CustomStringConvertible {
        /// What went wrong.
        var reason: String
        /// The master never proved the trusted key (or, pairing, the code): the failure came
        /// before the link was secured.
        var masterUnproven: Bool
        /// The trusted master refused this terminal in its proven handshake answer (`"refused"`
        /// in its payload: not, or no longer, paired). Only such a refusal means pairing again.
        var refusedByMaster: String?

        var description: String { reason }
    }

    private enum Stage: Equatable {
        /// Our first message is out; waiting for the master's answer.
        case handshaking
        /// Pairing: the handshake is done; waiting for the master's `paired`.
        case awaitingPaired(MasterGreeting)
        /// Sync messages flow.
        case secured(MasterGreeting)
        /// Over; every later call does nothing.
        case failed
    }

    /// How this link authenticates.
    let credential: MasterCredential
    private var link: SecureLink?
    private var stage: Stage

    /// A session for `credential`, started: returns it and its first message (`.send`), or a
    /// failed session and `.failed`. `localStatic` is the slave's node key; pairing sends
    /// `terminalName` and `terminalId` to the master in its third message.
    static func start(
        credential: MasterCredential, localStatic: NoiseKeyPair, terminalName: String, terminalId: String,
        options: SecureLinkOptions = .init(), random: NoiseRandomSource = .system
    ) -> (SlaveSecureSession, [Output]) {
        var session = SlaveSecureSession(credential: credential)
        do throws(SecureLinkError) {
            let (link, events): (SecureLink, [SecureLink.Event])
            switch credential {
            case .pairing(let code):
                let payload = JSONValue.object(JSONObject([("name", .string(terminalName)), ("terminal", .string(terminalId))]))
                (link, events) = try SecureLink.pairingInitiator(
                    code: code, localStatic: localStatic, payload: payload.serializedBytes(), options: options, random: random)
            case .known(let masterKey):
                (link, events) = try SecureLink.knownInitiator(
                    masterKey: masterKey, localStatic: localStatic, options: options, random: random)
            }
            session.link = link
            return (session, session.route(events))
        } catch {
            return (session, [session.fail("cannot start the secure link: \(error)")])
        }
    }

    private init(credential: MasterCredential) {
        self.credential = credential
        stage = .handshaking
    }

    /// True once sync messages flow.
    var isSecured: Bool {
        if case .secured = stage { return true }
        return false
    }

    /// True once the session failed.
    var hasFailed: Bool { stage == .failed }

    /// Handles one binary WebSocket message from the master.
    mutating func received(_ message: [UInt8]) -> [Output] {
        guard stage != .failed, var link else { return [] }
        do throws(SecureLinkError) {
            let events = try link.receive(message)
            self.link = link
            return route(events)
        } catch {
            return [fail("\(error)")]
        }
    }

    /// Seals one sync message for the master: the binary WebSocket messages to send, or
    /// `.failed`. Nothing is sent before the link is secured.
    mutating func seal(_ bytes: [UInt8]) -> [Output] {
        guard isSecured, var link else { return stage == .failed ? [] : [fail("a sync message before the link is secured")] }
        do throws(SecureLinkError) {
            let sealed = try link.seal(bytes)
            self.link = link
            return sealed.map { .send($0) }
        } catch {
            return [fail("cannot seal a message: \(error)")]
        }
    }

    /// A text message arrived: the secure subprotocols carry only binary messages.
    mutating func receivedText() -> Output {
        fail("a text message on a secure link")
    }

    private mutating func fail(_ reason: String) -> Output {
        let unproven = !isSecured
        stage = .failed
        link = nil
        return .failed(Failure(reason: reason, masterUnproven: unproven))
    }

    /// Turns the link's events into outputs; on any failure, only `.failed` comes out.
    private mutating func route(_ events: [SecureLink.Event]) -> [Output] {
        var outputs: [Output] = []
        for event in events {
            switch event {
            case .send(let bytes):
                outputs.append(.send(bytes))
            case .peerKeyPresented:
                return [fail("the link presented a peer key to its initiator")]
            case .established(let key, let payload):
                guard stage == .handshaking else { return [fail("a second handshake")] }
                guard let greeting = Self.greeting(key: key, payload: payload) else {
                    return [fail("the master's handshake payload does not name its key's node id")]
                }
                switch credential {
                case .known(let trusted):
                    guard key == trusted else { return [fail("the master answered with another key")] }
                    if let refused = Self.refusal(payload) {
                        stage = .failed
                        link = nil
                        return [
                            .failed(
                                Failure(
                                    reason: "the master refused this terminal: \(refused)", masterUnproven: false, refusedByMaster: refused)
                            )
                        ]
                    }
                    outputs += secure(greeting)
                case .pairing:
                    stage = .awaitingPaired(greeting)
                }
            case .message(let bytes):
                guard isSecured else { return [fail("a sync message before the link is secured")] }
                // Checked in place: the bytes go to the engine as they are, no `String` made.
                guard (try? UTF8Span(validating: bytes.span)) != nil else {
                    return [fail("a sync message that is not UTF-8")]
                }
                outputs.append(.message(bytes))
            case .control(let bytes):
                switch control(bytes) {
                case .success(let output?): outputs += output
                case .success(nil): break
                case .failure(let failure): return [fail(failure.reason)]
                }
            }
        }
        return outputs
    }

    /// A control message: `paired` completes a pairing, `masterKey` hands the trust over to a
    /// new key; other types (from a newer master) are ignored.
    private mutating func control(_ bytes: [UInt8]) -> Result<[Output]?, Failure> {
        guard let object = (try? JSONParser.parse(bytes, maxMembersPerObject: 16))?.objectValue,
            let type = object["type"]?.stringValue
        else { return .failure(Failure(reason: "a malformed control message", masterUnproven: !isSecured)) }
        switch (type, stage) {
        case ("paired", .awaitingPaired(let greeting)):
            return .success([.paired(greeting)] + secure(greeting))
        case ("paired", _):
            return .success(nil)
        case ("masterKey", .secured):
            guard let text = object["publicKey"]?.stringValue, let data = Data(base64Encoded: text), data.count == 32,
                object["master"]?.stringValue == NodeIdentity.nodeId(publicKey: Array(data))
            else {
                return .failure(Failure(reason: "a masterKey message without a 32-byte key of the id it names", masterUnproven: false))
            }
            return .success([.masterKeyHandover(masterId: NodeIdentity.nodeId(publicKey: Array(data)), publicKey: Array(data))])
        case ("masterKey", _):
            return .failure(Failure(reason: "a masterKey message before the link is secured", masterUnproven: true))
        default:
            guard isSecured else {
                return .failure(Failure(reason: "a control message before the link is secured", masterUnproven: true))
            }
            return .success(nil)
        }
    }

    /// The link is secured: the slave says what it reads (`SecureLinkFeatures`), then the
    /// engine may start.
    private mutating func secure(_ greeting: MasterGreeting) -> [Output] {
        stage = .secured(greeting)
        guard var link else { return [fail("a secured link without its transport")] }
        do throws(SecureLinkError) {
            let sealed = try link.seal(SecureLinkFeatures.readsBatches, control: true)
            self.link = link
            return sealed.map { .send($0) } + [.secured(greeting)]
        } catch {
            return [fail("cannot seal the features message: \(error)")]
        }
    }

    /// The master's refusal in its proven handshake payload (`"refused": "unknown terminal"`).
    private static func refusal(_ payload: [UInt8]) -> String? {
        (try? JSONParser.parse(payload, maxMembersPerObject: 16))?.objectValue?["refused"]?.stringValue
    }

    /// The master's handshake payload `{"master":"<node id>","store":"<store>"}`, when the id
    /// is the one of the key it proved.
    private static func greeting(key: [UInt8], payload: [UInt8]) -> MasterGreeting? {
        guard let object = (try? JSONParser.parse(payload, maxMembersPerObject: 16))?.objectValue,
            let id = object["master"]?.stringValue, id == NodeIdentity.nodeId(publicKey: key)
        else { return nil }
        return MasterGreeting(masterId: id, store: object["store"]?.stringValue, publicKey: key)
    }
}
