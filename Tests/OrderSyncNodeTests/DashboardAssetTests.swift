import Foundation
import XCTest

@testable import OrderSyncNode

/// The dashboard's page as served: the files under `Sources/Node/OrderSyncNode/Dashboard/Assets`
/// byte for byte, embedded at build time, each with its media type.
final class DashboardAssetTests: XCTestCase {
    /// The folder of the page's files in the source tree.
    private let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/Node/OrderSyncNode/Dashboard/Assets")

    func testEachPathServesItsFileAsItIsInTheSourceTree() throws {
        for (paths, file, type) in [
            (["/", "/index.html"], "dashboard.html", "text/html; charset=utf-8"),
            (["/dashboard.css"], "dashboard.css", "text/css; charset=utf-8"),
            (["/dashboard.js"], "dashboard.js", "text/javascript; charset=utf-8"),
        ] {
            let onDisk = try [UInt8](Data(contentsOf: assets.appendingPathComponent(file)))
            XCTAssertFalse(onDisk.isEmpty, file)
            for path in paths {
                let asset = try XCTUnwrap(DashboardPage.asset(path), path)
                XCTAssertEqual(asset.type, type, path)
                // Compared whole, reported by size (a failure would print every byte).
                XCTAssertTrue(
                    asset.body == onDisk,
                    "\(path) serves \(asset.body.count) bytes, not the \(onDisk.count) of \(file) as it is on disk")
            }
        }
        for path in ["/dashboard.html", "/Assets/dashboard.js", "/index.htm", ""] {
            XCTAssertNil(DashboardPage.asset(path), "\(path) is none of the page's files")
        }
    }

    func testThePageLoadsItsOwnScriptAndStylesheetOnly() throws {
        let html = String(decoding: try XCTUnwrap(DashboardPage.asset("/")).body, as: UTF8.self)
        XCTAssertTrue(html.contains(#"<link rel="stylesheet" href="/dashboard.css">"#))
        XCTAssertTrue(html.contains(#"<script src="/dashboard.js" defer></script>"#))
        XCTAssertFalse(html.contains("<style"), "no inline style: the Content-Security-Policy allows only the page's files")
        XCTAssertFalse(html.contains("<script>"), "no inline script")
        let script = String(decoding: try XCTUnwrap(DashboardPage.asset("/dashboard.js")).body, as: UTF8.self)
        XCTAssertTrue(script.hasPrefix("'use strict';\n"))
        XCTAssertFalse(script.contains("innerHTML"), "text from the store goes on the page as text")
    }
}
