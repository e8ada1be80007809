import Foundation
import XCTest

// A metrics system that each test bootstraps anew, as swift-metrics' tests do: the registry a test
// bootstrapped, and the counters it made through it, stay alive until the next test's bootstrap
// replaces the registry. XCTest runs the tests in order, and each test after the first waits longer
// than the grace period before it bootstraps, so that the previous test's registry and counters
// are alive when that test is judged.
//
// testACountsRequests leaves a registry and a counter that the next bootstrap releases: global
// state. testBKeepsACounter is its leaky twin: its counter is also kept by a list that nothing
// empties, and outlives the registry that held it.

final class MetricsRegistry {
    private var counters: [String: RequestCounter] = [:]

    func counter(_ label: String) -> RequestCounter {
        if let existing = counters[label] { return existing }
        let counter = RequestCounter(label: label)
        counters[label] = counter
        return counter
    }

    /// A counter made on a line of its own: made on `counter(_:)`'s line, the leaky twin's counter
    /// (alive at the end) and the first test's (released by the next bootstrap) would make that a
    /// line whose instances later tests replace, global state whatever holds them.
    func keptCounter(_ label: String) -> RequestCounter {
        let counter = RequestCounter(label: label)
        counters[label] = counter
        return counter
    }
}

final class RequestCounter {
    let label: String
    var value = 0
    init(label: String) { self.label = label }
}

enum MetricsBootstrap {
    nonisolated(unsafe) static var registry: MetricsRegistry?

    /// One line for every test: each bootstrap replaces the previous test's registry.
    static func bootstrap() { registry = MetricsRegistry() }
}

/// Counters kept past their registry: the leaky twin's leak.
nonisolated(unsafe) var keptCounters: [RequestCounter] = []

final class MetricsBootstrapTests: XCTestCase {
    /// Well past leak-audit's grace period (100 ms by default; the end-to-end test sets 20).
    private func waitPastTheGracePeriod() { Thread.sleep(forTimeInterval: 0.5) }

    func testACountsRequests() {
        MetricsBootstrap.bootstrap()
        MetricsBootstrap.registry?.counter("requests").value += 1
    }

    func testBKeepsACounter() {
        waitPastTheGracePeriod()
        MetricsBootstrap.bootstrap()
        if let counter = MetricsBootstrap.registry?.keptCounter("kept") { keptCounters.append(counter) }
    }

    func testCBootstraps() {
        waitPastTheGracePeriod()
        MetricsBootstrap.bootstrap()
    }
}
