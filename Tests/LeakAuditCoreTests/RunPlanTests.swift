import XCTest

@testable import LeakAuditCore

/// What a run's plan puts in the target's environment beyond leak-audit's own variables.
final class RunPlanTests: XCTestCase {
    /// A shell that started leak-audit left leak-audit's path in `_`: the target gets its own path
    /// there, as the shell gives a program it starts (SwiftPM's manifest cache keys on `_`).
    func testATargetStartedFromAShellGetsItsOwnPathInUnderscore() throws {
        let ownPath = LinuxPlatform().canonicalPath("/proc/self/exe")
        let plan = try RunPlan(
            AuditRequest(target: "env", arguments: []), on: LinuxPlatform(), inherited: ["_": ownPath])
        XCTAssertTrue(plan.executablePath.hasPrefix("/") && plan.executablePath.hasSuffix("/env"), plan.executablePath)
        XCTAssertEqual(plan.environment["_"], plan.executablePath, "found on PATH: named by the directory it was found in")
        let relative = try RunPlan(
            AuditRequest(target: "/usr/bin/../bin/env", arguments: []), on: LinuxPlatform(), inherited: ["_": ownPath])
        XCTAssertEqual(relative.environment["_"], "/usr/bin/../bin/env", "a command with a slash is named as typed")
    }

    /// A `_` that names another program (leak-audit started by `timeout`, or by a program that
    /// sets no `_`) is what a plain run under it sees too: it is left as it is.
    func testAnUnderscoreThatNamesAnotherProgramStays() throws {
        let underTimeout = try RunPlan(
            AuditRequest(target: "env", arguments: []), on: LinuxPlatform(), inherited: ["_": "/usr/bin/timeout"])
        XCTAssertNil(underTimeout.environment["_"])
        let none = try RunPlan(AuditRequest(target: "env", arguments: []), on: LinuxPlatform(), inherited: [:])
        XCTAssertNil(none.environment["_"])
    }
}
