import Foundation
import XCTest

/// Which test allocated each instance, and which tests left instances alive.
final class AttributionTests: XCTestCase {
    private let bundle = "FixturesPackageTests.xctest"

    private func tests(_ audit: Harness.Audit) -> [String: [[String: Any]]] {
        var result: [String: [[String: Any]]] = [:]
        for test in audit.json["tests"] as? [[String: Any]] ?? [] {
            result[test["name"] as? String ?? ""] = test["leaked"] as? [[String: Any]] ?? []
        }
        return result
    }

    func testXCTestAllocationsNameTheirTestWithNoOption() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests"])
        XCTAssertEqual(audit.status, 1)
        XCTAssertTrue(audit.json["tests"] is NSNull, "the per-test summary comes with --leaks-per-test")
        let screen = try audit.type(".ProfileScreen")
        let byTest = Dictionary(grouping: screen.allocations) { $0["test"] as? String ?? "" }
        XCTAssertEqual(byTest["ScreenTests.ScreenTests/testLeaksScreens"]?.first?.int("count"), 3, "\(screen.allocations)")
        XCTAssertEqual(byTest["ScreenTests.ScreenTests/testReleasesScreens"]?.first?.int("count"), 1)
    }

    func testLeaksPerTestBlamesOnlyTheTestThatLeaked() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1)
        let tests = tests(audit)
        XCTAssertEqual(
            Set(tests.keys), ["ScreenTests.ScreenTests/testLeaksScreens", "ScreenTests.ScreenTests/testReleasesScreens"])
        let leaked = try XCTUnwrap(tests["ScreenTests.ScreenTests/testLeaksScreens"])
        XCTAssertEqual(leaked.map { $0["type"] as? String }, ["ScreenTests.ProfileScreen"])
        XCTAssertEqual(leaked.first?.int("count"), 3)
        XCTAssertEqual(
            tests["ScreenTests.ScreenTests/testReleasesScreens"]?.count, 0, "a clean test is listed with nothing leaked")

        let text = Harness.run([
            Harness.leakAudit, "run", "--leaks-per-test", try Harness.fixture(bundle), "ScreenTests.ScreenTests",
        ])
        XCTAssertTrue(
            text.stderr.contains("LEAKED ScreenTests.ScreenTests/testLeaksScreens: 3 ScreenTests.ProfileScreen"), text.stderr)
        XCTAssertTrue(text.stderr.contains("3 × allocated in ScreenTests.ScreenTests/testLeaksScreens at"), text.stderr)
    }

    func testACleanTestAloneIsClean() throws {
        let audit = try Harness.audit(bundle, ["ScreenTests.ScreenTests/testReleasesScreens"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(tests(audit).mapValues(\.count), ["ScreenTests.ScreenTests/testReleasesScreens": 0])
    }

    func testGracePeriodCoversWorkThatFinishesAsynchronously() throws {
        let generous = try Harness.audit(
            bundle, ["ScreenTests.AsyncReleaseTests"], extraOptions: ["--leaks-per-test", "--grace-period", "500"])
        XCTAssertEqual(generous.status, 0, generous.stderr)
        XCTAssertEqual(tests(generous).mapValues(\.count), ["ScreenTests.AsyncReleaseTests/testReleasesLater": 0])

        let none = try Harness.audit(
            bundle, ["ScreenTests.AsyncReleaseTests"], extraOptions: ["--leaks-per-test", "--grace-period", "0"])
        XCTAssertEqual(none.status, 1)
        XCTAssertEqual(tests(none)["ScreenTests.AsyncReleaseTests/testReleasesLater"]?.first?.int("count"), 1)

        let bad = Harness.run([Harness.leakAudit, "run", "--grace-period", "-5", try Harness.fixture(bundle)])
        XCTAssertEqual(bad.status, 64)
    }

    func testSwiftTestingTestsRunningInParallelAreAttributedExactly() throws {
        let audit = try Harness.audit(bundle, ["--testing-library", "swift-testing"], extraOptions: ["--leaks-per-test"])
        XCTAssertEqual(audit.status, 1)
        let tests = tests(audit)
        let leaky = try XCTUnwrap(tests.first { $0.key.hasPrefix("ScreenTests.ProfileSwiftTests/leaksSettings()") })
        XCTAssertEqual(leaky.value.first?.int("count"), 3)
        let clean = try XCTUnwrap(tests.first { $0.key.hasPrefix("ScreenTests.ProfileSwiftTests/releasesSettings()") })
        XCTAssertEqual(clean.value.count, 0, "never blamed for the other test's objects")
    }
}
