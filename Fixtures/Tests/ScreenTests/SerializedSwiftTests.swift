// Swift Testing runs a `.serialized` suite's tests one after another, each made current by a
// task-local push of its runner and ended by the pop: `keepsTickets` keeps tickets in a static
// list, `keepsStamps` stamps, and `releasesStamps`, the clean twin, lets its stamps go. Each is
// blamed for its own objects only, whichever task runs it: an answer the shim kept for a task
// past the runner's push or pop would name the test before.
import Synchronization
import Testing

final class Ticket: Sendable {
    let total: Int
    init(total: Int) { self.total = total }
}

final class Stamp: Sendable {
    let value: Int
    init(value: Int) { self.value = value }
}

enum Drawer {
    static let tickets = Mutex<[Ticket]>([])
    static let stamps = Mutex<[Stamp]>([])
}

@Suite(.serialized) struct SerializedSwiftTests {
    @Test func keepsTickets() {
        let tickets = (1...2).map { Ticket(total: $0) }
        Drawer.tickets.withLock { $0 += tickets }
        #expect(tickets.count == 2)
    }

    @Test func keepsStamps() {
        let stamps = (1...3).map { Stamp(value: $0) }
        Drawer.stamps.withLock { $0 += stamps }
        #expect(stamps.count == 3)
    }

    @Test func releasesStamps() {
        let stamps = (1...3).map { Stamp(value: $0) }
        #expect(stamps.reduce(0) { $0 + $1.value } == 6)
    }
}
