import CMallocCounter
import Foundation
import MicroBenchCases

// ordersync-microbench CASE ITERATIONS: runs one step of the hot path ITERATIONS times (after a
// warm-up of 50) and prints one JSON line: the allocations it made per iteration,
// counted by the allocator linked into this program only. Under
// `valgrind --tool=callgrind`, two runs (N and 2N) give the instructions per iteration
// (`Scripts/callgrind.sh`).
let arguments = CommandLine.arguments
guard arguments.count == 3, let iterations = Int(arguments[2]), iterations > 0 else {
    FileHandle.standardError.write(
        Data("usage: ordersync-microbench CASE ITERATIONS (\(MicroBenchCase.names.joined(separator: ", ")))\n".utf8))
    exit(2)
}
do {
    // A fixed warm-up, so that it cancels out of Scripts/callgrind.sh's (Ir(2N) - Ir(N)) / N.
    let warmUp = min(50, iterations)
    let bench = try MicroBenchCase(arguments[1], capacity: iterations + warmUp)
    try bench.run(warmUp)
    ordersync_malloc_reset()
    try bench.run(iterations)
    let count = ordersync_malloc_count()
    let bytes = ordersync_malloc_bytes()
    let perOp = Double(count) / Double(iterations)
    print(
        #"{"case":"\#(arguments[1])","iterations":\#(iterations),"mallocs":\#(count),"mallocs_per_op":\#(String(format: "%.2f", perOp)),"bytes_per_op":\#(String(format: "%.1f", Double(bytes) / Double(iterations))),"checksum":\#(bench.checksum)}"#
    )
} catch {
    FileHandle.standardError.write(Data("ordersync-microbench: \(error)\n".utf8))
    exit(1)
}
