import ArgumentParser
import Foundation
import JSON
import NodePolicy
import OrderSyncNode
import SyncCore

/// `ordersync promote`: the running slave of the data directory becomes the store's master
/// (Docs/OPERATIONS.md, "When the master dies").
struct PromoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote",
        abstract: "Make the running slave of this data directory the store's master (the old master is dead).",
        discussion: """
            The slave raises the store's term, collects promises from a majority of the voters (the old \
            master and the paired fixed terminals), fetches any tail it lacks from the most current one, \
            and serves as master in the same process; the other slaves follow it within seconds. Without \
            a majority it changes nothing, lists the voters it could not reach and exits 1. --force goes \
            on with whoever promised: use it only when you know the old master is gone for good.
            """)

    @OptionGroup var data: DataDirOption

    @Flag(name: .long, help: "Go on without a majority of voters (the old master is gone for good).")
    var force = false

    @Flag(name: .long, help: "Print the answer as JSON.")
    var json = false

    func run() throws {
        let dir = try data.resolved(for: .slave)
        let response = try reportingFailures {
            do {
                return try LocalAPIClient(dataDirectory: dir).send(
                    method: "POST", path: "/v1/promote", body: PromoteRequest(force: force).jsonValue)
            } catch LocalAPIClientError.noDaemon {
                throw fail(
                    "no slave is running for \(dir); promote a running slave (`ordersync slave --data-dir \(dir)`).", .unavailable)
            }
        }
        if json { print(response.body.serialized()) }
        if (200..<300).contains(response.status) {
            guard !json else { return }
            do {
                for line in try PromotionReport(json: response.body).lines { print(line) }
            } catch {
                throw fail("the slave's answer makes no sense: \(error)", .protocolError)
            }
            return
        }
        let error = response.body.objectValue?["error"]?.objectValue ?? JSONObject()
        if !json {
            for line in PromoteRefusal.lines(error) { FileHandle.standardError.write(Data("\(line)\n".utf8)) }
        }
        throw Self.exitStatus(refusal: error["code"]?.stringValue ?? "", httpStatus: response.status).exitCode
    }

    /// The exit status of a refused promotion: 1 for every refusal a promotion knows (no
    /// majority, a tail it could not fetch or that is no longer held, a rival, not a slave, ...:
    /// `PromotionReport.Refusal.Code`, and `PromoteRefusal.Code` of the local API); what the local
    /// API itself refused keeps the exit status of every other command.
    static func exitStatus(refusal code: String, httpStatus: Int) -> ExitStatus {
        if PromotionReport.Refusal.Code(rawValue: code) != nil || PromoteRefusal.Code(rawValue: code) != nil { return .failure }
        return ExitStatus.forAPIError(code: code, httpStatus: httpStatus)
    }
}
