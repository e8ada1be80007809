// A process-wide registry that makes and keeps what it is asked for (a metrics registry's
// counters, by name), against a shared hub that a test hands its own view model to. With
// --retainers: RegistryTests/testRegistersACounter's counter is global state (the registry made it
// and keeps it for the rest of the run), RegistryTests/testSubscribesAFeed's feed is its leak (the
// test made it and the hub keeps it), and RegistryTests/testUnsubscribesAFeed is the clean twin.
import XCTest

final class MetricCounter {
    let name: String
    var value = 0
    init(name: String) { self.name = name }
}

final class MetricRegistry {
    nonisolated(unsafe) static let shared = MetricRegistry()
    private var counters: [String: MetricCounter] = [:]

    func makeCounter(name: String) -> MetricCounter {
        if let known = counters[name] { return known }
        let counter = MetricCounter(name: name)
        counters[name] = counter
        return counter
    }
}

final class FeedViewModel {
    var items: [String] = []
}

final class FeedHub {
    nonisolated(unsafe) static let shared = FeedHub()
    var subscribers: [FeedViewModel] = []
}

final class RegistryTests: XCTestCase {
    func testRegistersACounter() {
        let counter = MetricRegistry.shared.makeCounter(name: "requests")
        counter.value += 1
        XCTAssertEqual(counter.value, 1)
    }

    func testSubscribesAFeed() {
        let feed = FeedViewModel()
        FeedHub.shared.subscribers.append(feed)
        XCTAssertEqual(FeedHub.shared.subscribers.count, 1)
    }

    func testUnsubscribesAFeed() {
        let feed = FeedViewModel()
        FeedHub.shared.subscribers.append(feed)
        FeedHub.shared.subscribers.removeAll { $0 === feed }
        XCTAssertTrue(FeedHub.shared.subscribers.allSatisfy { $0 !== feed })
    }
}
