import ArgumentParser

/// A command line whose first word is not a command (`ordersync stauts`): named, with the
/// nearest command when one is close, before the settings file is read, so that a typo is not
/// answered with a complaint about the file's settings. Exit 64 (usage).
struct UnknownCommand {
    /// The word given.
    let word: String
    /// The command it is most likely a typo of, if any is close.
    let suggestion: String?

    /// The commands of `ordersync` (and `help`).
    static var commandNames: [String] {
        OrderSyncCommand.configuration.subcommands.map { $0._commandName } + ["help"]
    }

    /// Nil when `arguments` start with a command, an option (`--version`, `--help`) or nothing.
    init?(arguments: [String]) {
        guard let first = arguments.first, !first.hasPrefix("-"), !Self.commandNames.contains(first) else { return nil }
        word = first
        suggestion = Self.nearest(to: first, among: Self.commandNames)
    }

    /// `unknown command 'stauts'; did you mean 'status'?`
    var message: String {
        let hint = suggestion.map { "; did you mean '\($0)'?" } ?? "; `ordersync --help` lists the commands"
        return "unknown command '\(word)'" + hint
    }

    /// The name within edit distance 2 of `word` (a third of its length at most), nearest first;
    /// nil when none is that close.
    static func nearest(to word: String, among names: [String]) -> String? {
        let limit = max(1, min(2, word.count / 3))
        let scored = names.map { (name: $0, distance: editDistance(word.lowercased(), $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= limit else { return nil }
        return best.name
    }

    /// The optimal string alignment distance between `a` and `b`: insertions, deletions,
    /// substitutions and swaps of two neighbours (`stauts` → `status` is one swap) count one.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a)
        let y = Array(b)
        guard !x.isEmpty else { return y.count }
        guard !y.isEmpty else { return x.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }
}
