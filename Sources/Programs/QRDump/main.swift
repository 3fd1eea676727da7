import Glibc
import QRCode

// ordersync-qr: the QRCode module from the command line, for conformance tests against an
// independent encoder (Tests/conformance/test_qrcode_segno.py compares with Python's `segno`).
//
//   ordersync-qr [--level L|M|Q|H] [--mask 0-7] [--terminal] TEXT
//
// Prints `version V mask M`, then the symbol one row per line as `0` (light) and `1` (dark); with
// --terminal, the symbol as `QRCode.terminalText()` draws it instead. Exits 1 when the text
// cannot be encoded, 2 on a usage error.

/// Standard error as a text stream, written with `write(2)` (no C `FILE *` global is touched).
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var bytes = Array(string.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}

func fail(_ message: String, status: Int32) -> Never {
    var standardError = StandardError()
    print("ordersync-qr: \(message)", to: &standardError)
    exit(status)
}

var level = QRCode.ErrorCorrection.medium
var mask: Int?
var terminal = false
var text: String?

var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--level":
        guard let value = arguments.popFirst(),
            let parsed = QRCode.ErrorCorrection.allCases.first(where: { $0.letter == value })
        else { fail("--level is L, M, Q or H", status: 2) }
        level = parsed
    case "--mask":
        guard let value = arguments.popFirst(), let parsed = Int(value) else { fail("--mask needs a number", status: 2) }
        mask = parsed
    case "--terminal":
        terminal = true
    case "--":
        text = arguments.popFirst()
    default:
        guard text == nil else { fail("one text only, got \(argument) too", status: 2) }
        text = argument
    }
}
guard let text else { fail("usage: ordersync-qr [--level L|M|Q|H] [--mask 0-7] [--terminal] TEXT", status: 2) }

do {
    let code = try QRCode(encoding: text, errorCorrection: level, mask: mask)
    if terminal {
        print(code.terminalText())
    } else {
        print("version \(code.version) mask \(code.mask)")
        for y in 0..<code.size {
            print(String((0..<code.size).map { code.isDark(x: $0, y: y) ? "1" : "0" }))
        }
    }
} catch {
    fail(error.description, status: 1)
}
