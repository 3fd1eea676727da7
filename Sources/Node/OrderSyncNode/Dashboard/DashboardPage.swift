/// The dashboard's page, served from the binary: HTML, CSS and plain JavaScript, nothing from
/// elsewhere (the Content-Security-Policy allows only the page's own files).
enum DashboardPage {
    struct Asset {
        var type: String
        var body: [UInt8]
    }

    /// The file served at `path`; nil: not one of the page's files.
    static func asset(_ path: String) -> Asset? {
        switch path {
        case "/", "/index.html": return Asset(type: "text/html; charset=utf-8", body: Array(html.utf8))
        case "/dashboard.css": return Asset(type: "text/css; charset=utf-8", body: Array(css.utf8))
        case "/dashboard.js": return Asset(type: "text/javascript; charset=utf-8", body: Array(DashboardScript.source.utf8))
        default: return nil
        }
    }

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>OrderSync dashboard</title>
        <link rel="stylesheet" href="/dashboard.css">
        <script src="/dashboard.js" defer></script>
        </head>
        <body>
        <header>
          <h1>OrderSync <span id="store"></span></h1>
          <span id="live" class="badge">offline</span>
          <button id="logout" type="button" hidden>Log out</button>
        </header>
        <main>
        <section id="login" hidden>
          <h2>Log in</h2>
          <p>Open the address <code>ordersync dashboard</code> printed on the master, or paste its token.</p>
          <form id="login-form">
            <label for="token">Dashboard token</label>
            <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required>
            <button type="submit">Log in</button>
            <p id="login-error" class="error" role="alert"></p>
          </form>
        </section>
        <div id="board" hidden>
          <section id="summary-section">
            <div id="summary" class="summary"></div>
          </section>
          <section>
            <h2>Terminals</h2>
            <table id="terminals" class="grid">
              <thead><tr><th>Terminal</th><th>State</th><th>Last heard</th><th>Lag</th><th>Outbox</th><th>Address</th></tr></thead>
              <tbody></tbody>
            </table>
            <p id="no-terminals" class="muted" hidden>No terminal has connected yet.</p>
          </section>
          <section>
            <h2>Orders <span id="order-count" class="muted"></span></h2>
            <table id="orders" class="grid">
              <thead><tr><th>Customer</th><th>Status</th><th>Table</th><th>Items</th><th>Created</th><th>Order</th></tr></thead>
              <tbody></tbody>
            </table>
            <div class="pager">
              <button id="prev" type="button">Previous</button>
              <span id="page"></span>
              <button id="next" type="button">Next</button>
            </div>
          </section>
          <section>
            <h2>Refused operations</h2>
            <table id="rejections" class="grid">
              <thead><tr><th>When</th><th>From</th><th>Operation</th><th>Order</th><th>Reason</th></tr></thead>
              <tbody></tbody>
            </table>
            <p id="no-rejections" class="muted" hidden>Nothing was refused.</p>
          </section>
          <section>
            <h2>Journal</h2>
            <form id="journal-form" class="filters">
              <label>Order <input name="order" placeholder="order UUID" spellcheck="false"></label>
              <label>Terminal <input name="terminal" list="terminal-names" placeholder="name or id"></label>
              <datalist id="terminal-names"></datalist>
              <label>From <input name="from" type="datetime-local"></label>
              <label>To <input name="to" type="datetime-local"></label>
              <button type="submit">Search</button>
            </form>
            <p id="journal-error" class="error" role="alert"></p>
            <table id="journal" class="grid">
              <thead><tr><th>Seq</th><th>When</th><th>From</th><th>Operation</th><th>Orders</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </div>
        </main>
        </body>
        </html>

        """#

    static let css = #"""
        :root { --fg: #1d2329; --muted: #5f6b76; --line: #d9dee3; --bg: #f5f7f9; --card: #fff;
                --ok: #137333; --away: #b3261e; --accent: #1a5fb4; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; align-items: center; gap: 12px; padding: 10px 16px; background: #22303c; color: #fff; position: sticky; top: 0; z-index: 1; }
        header h1 { font-size: 18px; margin: 0; flex: 1; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        header button { background: transparent; color: #fff; border: 1px solid #8aa; }
        main { max-width: 1200px; margin: 0 auto; padding: 12px; }
        section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin-bottom: 14px; }
        h2 { font-size: 16px; margin: 0 0 10px; }
        .badge { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #6b7780; color: #fff; }
        .badge.live { background: var(--ok); }
        .summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: 8px; }
        .summary div { padding: 6px 8px; border-radius: 6px; background: var(--bg); }
        .summary b { display: block; font-size: 18px; }
        .summary span { color: var(--muted); font-size: 12px; }
        table.grid { width: 100%; border-collapse: collapse; }
        [hidden] { display: none !important; }
        .grid th, .grid td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        .grid th { font-size: 12px; color: var(--muted); font-weight: 600; }
        .state { font-weight: 600; }
        .state.up { color: var(--ok); }
        .state.away { color: var(--away); }
        .outbox.waiting { color: var(--away); font-weight: 600; }
        .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; word-break: break-all; }
        .muted { color: var(--muted); font-weight: normal; }
        .error { color: var(--away); min-height: 1em; }
        .pager { display: flex; align-items: center; gap: 10px; margin-top: 8px; }
        button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--line); background: var(--card); cursor: pointer; }
        button[type=submit] { background: var(--accent); color: #fff; border-color: var(--accent); }
        input { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; width: 100%; min-width: 0; max-width: 100%; }
        .filters > * { min-width: 0; }
        #login-form { display: grid; gap: 8px; max-width: 420px; }
        .filters { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 8px; align-items: end; margin-bottom: 8px; }
        .filters label { display: grid; gap: 2px; font-size: 12px; color: var(--muted); }
        tr.fresh td { animation: fresh 2s ease-out; }
        @keyframes fresh { from { background: #fff3b0; } to { background: transparent; } }
        @media (max-width: 700px) {
          main { padding: 8px; }
          section { padding: 10px; }
          .grid thead { display: none; }
          .grid tr { display: block; border-bottom: 1px solid var(--line); padding: 6px 0; }
          .grid td { display: flex; gap: 8px; border: 0; padding: 2px 4px; }
          .grid td::before { content: attr(data-label); flex: 0 0 84px; color: var(--muted);
                             font: normal 12px/1.8 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
          .grid td.optional { display: none; }
        }

        """#
}
