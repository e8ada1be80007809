import XCTest

@testable import LeakAuditModel

final class TestCasePropertyTests: XCTestCase {
    /// One kept type held through eight properties of one test case, each in one test: the
    /// properties come out in the same order in every run (by name when as many tests set them),
    /// never in a dictionary's order, which changes from process to process.
    func testPropertiesThatTieAreListedByName() {
        let names = ["zeta", "eta", "alpha", "theta", "delta", "beta", "gamma", "epsilon"]
        var kept = AuditReport.TestReport.LeakedType(type: "App.Screen", count: names.count, allocations: [])
        kept.retainers = names.map { name in
            Retainer(
                count: 1, root: .init(kind: .testCase, name: "AppTests.ScreenTests"),
                path: [.init(via: "AppTests.ScreenTests", type: "AppTests.ScreenTests"), .init(via: name, type: "App.Screen")],
                retainedBytes: 48)
        }
        var test = AuditReport.TestReport(name: "AppTests.ScreenTests/testOpen", leaked: [])
        test.keptByTestCase = [kept]
        let properties = TestCaseProperty.grouped([test])
        XCTAssertEqual(properties.map(\.property), names.sorted())
        XCTAssertEqual(properties.map(\.holder), Array(repeating: "ScreenTests", count: names.count))
    }
}
