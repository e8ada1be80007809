import XCTest

/// `--retainers`: who holds each instance still alive at exit, checked on real fixture programs
/// (docs/retainers.md).
final class RetainersTests: XCTestCase {
    /// The retainers of the tracked type named …`suffix`, as (count, root kind, root name, vias).
    private func retainers(_ audit: Harness.Audit, _ suffix: String) throws -> [(Int, String, String, [String])] {
        let type = try audit.type(suffix)
        let groups = try XCTUnwrap(type["retainers"] as? [[String: Any]], "no retainers in \(type)")
        return groups.map { group in
            let root = group["root"] as? [String: Any] ?? [:]
            let path = group["path"] as? [[String: Any]] ?? []
            return (
                group["count"] as? Int ?? 0, root["kind"] as? String ?? "", root["name"] as? String ?? "",
                path.map { $0["via"] as? String ?? "" }
            )
        }
    }

    func testAViewModelHeldByASharedHubIsTracedToTheStaticProperty() throws {
        let audit = try Harness.audit("ViewModelRetention", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".LoginViewModel")
        XCTAssertEqual(found.count, 1, "\(found)")
        let (count, kind, name, vias) = try XCTUnwrap(found.first)
        XCTAssertEqual(count, 3)
        XCTAssertEqual(kind, "global")
        XCTAssertEqual(name, "ViewModelRetention.EventHub.shared")
        XCTAssertEqual(vias, ["ViewModelRetention.EventHub.shared", "subscribers", "[key]"])
        let type = try audit.type(".LoginViewModel")
        let path = try XCTUnwrap((type["retainers"] as? [[String: Any]])?.first?["path"] as? [[String: Any]])
        XCTAssertEqual(
            path.map { $0["type"] as? String },
            [
                "ViewModelRetention.EventHub", "[Swift.ObjectIdentifier: ViewModelRetention.LoginViewModel]",
                "ViewModelRetention.LoginViewModel",
            ])

        let text = Harness.run([Harness.leakAudit, "run", "--retainers", try Harness.fixture("ViewModelRetention"), "leaky"])
        // A line too long for the terminal continues, indented, on the next.
        let unwrapped = text.stderr.replacingOccurrences(of: "\n    ", with: " ")
        XCTAssertTrue(
            unwrapped.contains(
                "3 × held by global ViewModelRetention.EventHub.shared: EventHub.subscribers → [key] LoginViewModel"),
            text.stderr)
    }

    func testAClosureCycleIsShownAsTheCycle() throws {
        let audit = try Harness.audit("DismissalCapture", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        for (type, vias) in [(".CheckoutFlow", ["", "sheet", "onDismiss"]), (".SheetViewModel", ["", "onDismiss", "sheet"])] {
            let found = try retainers(audit, type)
            XCTAssertEqual(found.count, 1, "\(type): \(found)")
            XCTAssertEqual(found.first?.0, 2)
            XCTAssertEqual(found.first?.1, "cycle")
            XCTAssertEqual(found.first?.3, vias)
        }
    }

    func testElementsOfAGlobalArrayAreCountedAndTheirIndexesGrouped() throws {
        let audit = try Harness.audit("WeakObservers", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let found = try retainers(audit, ".PriceLabel")
        XCTAssertEqual(found.map(\.0), [5])
        XCTAssertEqual(found.first?.2, "WeakObservers.strong")
        XCTAssertEqual(found.first?.3, ["WeakObservers.strong", "observers", "[i]"])
    }

    func testCleanTwinsHaveNothingToExplain() throws {
        for fixture in ["ViewModelRetention", "DismissalCapture", "WeakObservers"] {
            let audit = try Harness.audit(fixture, ["clean"], extraOptions: ["--retainers"])
            XCTAssertEqual(audit.status, 0, "\(fixture): \(audit.stderr)")
            XCTAssertTrue(audit.types.allSatisfy { $0["retainers"] == nil }, "\(fixture): \(audit.types)")
        }
    }

    func testWithoutTheOptionTheReportHasNoRetainers() throws {
        let audit = try Harness.audit("ViewModelRetention", ["leaky"])
        XCTAssertEqual(audit.status, 1)
        XCTAssertNil(try audit.type(".LoginViewModel")["retainers"])
    }
}
