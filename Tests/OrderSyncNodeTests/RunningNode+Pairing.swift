import Foundation
import JSON
import OrderSyncNode
import SecureLink
import XCTest

extension RunningNode {
    /// Opens a pairing window on this master through its local API (as `ordersync pair`
    /// does) and returns the code.
    func openPairingWindow(name: String? = nil) throws -> PairingCode {
        let body = name.map { JSONValue.object(JSONObject([("name", .string($0))])) }
        let answer = try LocalAPIClient(dataDirectory: dataDirectory).send(method: "POST", path: "/v1/pairing", body: body)
        XCTAssertEqual(answer.status, 201, "\(answer.body)")
        let text = try XCTUnwrap(answer.body.objectValue?["code"]?.stringValue, "\(answer.body)")
        return try PairingCode(parsing: text)
    }

    /// A slave of this master, paired through a pairing window on its first start.
    func pairedSlave(
        dataDirectory: String, name: String, configure: @escaping (inout NodeConfiguration) -> Void = { _ in }
    ) throws -> RunningNode {
        let code = try openPairingWindow(name: name)
        return try RunningNode(
            role: .slave, dataDirectory: dataDirectory, name: name, masterURL: MasterURL(host: "127.0.0.1", port: port),
            configure: { c in
                c.pairingCode = code
                configure(&c)
            })
    }
}
