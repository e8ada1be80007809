// Words that read as an object's address in fields that cannot hold one, for --retainers: a global
// ledger keeps each leaked receipt's address in an Int, a Date and an optional struct of plain
// values, and a C function pointer right before the field that truly holds the receipt's printer. Each receipt is over-retained (Unmanaged.passRetained) and nothing else
// refers to it: its holder is unknown, never the ledger. Each printer is held by the ledger's
// `printer` field, with no closure on the way. Three receipts are made (budget 1). The clean twin
// releases each receipt and leaves its address in the ledger all the same. Spoolers are held
// through a generic box of an existential (`SinkBox<any PrintSink>`), which the path names.
// Tickets are yielded to an `AsyncStream` a global keeps; a task takes the first two, keeps them
// in its frame and sleeps: the stream's deque (a ring in a ManagedBuffer's elements) keeps the
// third, and its first two slots keep the stale words of the two taken, which hold nothing. The
// clean twin yields one ticket, which the task takes and lets go.
import Dispatch
import Foundation
import LeakMonitor

final class Receipt: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

final class Printer: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// Plain values only: whatever its words read as, it holds nothing.
struct Stamp {
    var serial: Int
    var printedAt: Double
}

/// A C callback and the object it prints to, as a C library's context struct would have them.
struct PrintJob {
    var callback: @convention(c) (Int32) -> Int32
    var printer: Printer
}

final class LedgerEntry {
    var serial = 0
    var recordedAt = Date()
    var flagged = false
    var stamp: Stamp? = nil
    var job: PrintJob
    init(job: PrintJob) { self.job = job }
}

final class Ledger {
    var entries: [LedgerEntry] = []
}

/// Spoolers held through a generic box of an existential: the path names the protocol.
protocol PrintSink: AnyObject {}

final class Spooler: PrintSink, MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

final class SinkBox<Sink> {
    var sink: Sink
    init(_ sink: Sink) { self.sink = sink }
}

final class Sinks {
    var boxes: [SinkBox<any PrintSink>] = []
}

final class Ticket: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
/// The stream and its continuation, as a producer keeps them.
let tickets = AsyncStream<Ticket>.makeStream()
let ledger = Ledger()
let sinks = Sinks()

for serial in 1...3 {
    let receipt = Receipt()
    let address = Int(bitPattern: Unmanaged.passUnretained(receipt).toOpaque())
    let entry = LedgerEntry(job: PrintJob(callback: { $0 + 1 }, printer: Printer()))
    entry.serial = address
    entry.recordedAt = Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64(address)))
    entry.stamp = Stamp(serial: address, printedAt: Double(bitPattern: UInt64(address)))
    ledger.entries.append(entry)
    sinks.boxes.append(SinkBox(Spooler()))
    if !leaky { sinks.boxes.removeAll() }
    if leaky {
        _ = Unmanaged.passRetained(receipt)
    } else if serial < 3 {
        ledger.entries.removeLast()
    }
}
print("FalseHolders: \(ledger.entries.count) ledger entries, serial \(ledger.entries.last?.serial ?? 0 > 0)")

for _ in 1...(leaky ? 3 : 1) { tickets.continuation.yield(Ticket()) }
let taken = DispatchSemaphore(value: 0)
let counter = Task.detached { [leaky] in
    var iterator = tickets.stream.makeAsyncIterator()
    var kept: [Ticket] = []
    for _ in 1...(leaky ? 2 : 1) {
        if let ticket = await iterator.next() { kept.append(ticket) }
    }
    if !leaky { kept.removeAll() }
    taken.signal()
    try? await Task.sleep(for: .seconds(3600))
    print("FalseHolders: the counter kept \(kept.count) tickets")
}
taken.wait()
print("FalseHolders: tickets taken")
