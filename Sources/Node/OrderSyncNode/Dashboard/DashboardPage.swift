/// The dashboard's page, served from the binary: HTML, CSS and plain JavaScript, nothing from
/// elsewhere (the Content-Security-Policy allows only the page's own files). The files are
/// `Assets/dashboard.html`, `.css` and `.js`, each checked by a linter of its own
/// (`Scripts/lint.sh`) and embedded in the binary at build time (`PackageResources`, which
/// SwiftPM generates from the `.embedInCode` resources in `Package.swift`). The script puts
/// everything from the store on the page as text (`textContent`), never as HTML.
enum DashboardPage {
    struct Asset {
        var type: String
        var body: [UInt8]
    }

    /// The file served at `path`; nil: not one of the page's files.
    static func asset(_ path: String) -> Asset? {
        switch path {
        case "/", "/index.html": return Asset(type: "text/html; charset=utf-8", body: PackageResources.dashboard_html)
        case "/dashboard.css": return Asset(type: "text/css; charset=utf-8", body: PackageResources.dashboard_css)
        case "/dashboard.js": return Asset(type: "text/javascript; charset=utf-8", body: PackageResources.dashboard_js)
        default: return nil
        }
    }
}
