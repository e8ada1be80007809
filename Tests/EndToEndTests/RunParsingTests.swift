import ArgumentParser
import XCTest

@testable import LeakAuditCLI

/// `leak-audit run …` parsed with `run` as the root command (`LeakAudit.parsedRun`): the same
/// `Run` as the whole tool parses, and nothing for what only the whole tool answers.
final class RunParsingTests: XCTestCase {
    private func parsedByTheTool(_ arguments: [String]) throws -> Run {
        let command = try LeakAudit.parseAsRoot(arguments)
        return try XCTUnwrap(command as? Run, "\(arguments) parsed into \(type(of: command))")
    }

    func testARunParsesAsTheWholeToolParsesIt() throws {
        let lines = [
            ["run", "program"],
            ["run", "program", "--version", "-h", "--output", "x"],
            [
                "run", "--format", "json", "-o", "report.json", "--output-text", "report.txt", "--budget", "A.*=2",
                "--budget", "B=1", "--timeout", "30", "--grace-period", "5", "--leaks-per-test", "--census", "--quiet",
                "--color", "never", "--baseline", "base.json", "program", "a", "--", "b",
            ],
            ["run", "--", "program", "--format", "sarif"],
            ["run", "run", "help"],
        ]
        for line in lines {
            let fast = try XCTUnwrap(LeakAudit.parsedRun(line), "\(line)")
            let whole = try parsedByTheTool(line)
            XCTAssertEqual(fast.target, whole.target, "\(line)")
            XCTAssertEqual(fast.targetArguments, whole.targetArguments, "\(line)")
            XCTAssertEqual(fast.timeout, whole.timeout, "\(line)")
            XCTAssertEqual(fast.report.format, whole.report.format, "\(line)")
            XCTAssertEqual(fast.report.output, whole.report.output, "\(line)")
            XCTAssertEqual(fast.report.outputText, whole.report.outputText, "\(line)")
            XCTAssertEqual(fast.report.quiet, whole.report.quiet, "\(line)")
            XCTAssertEqual(fast.report.color, whole.report.color, "\(line)")
            XCTAssertEqual(fast.watch.budgets, whole.watch.budgets, "\(line)")
            XCTAssertEqual(fast.watch.census, whole.watch.census, "\(line)")
            XCTAssertEqual(fast.tests.leaksPerTest, whole.tests.leaksPerTest, "\(line)")
            XCTAssertEqual(fast.tests.gracePeriod, whole.tests.gracePeriod, "\(line)")
            XCTAssertEqual(fast.baseline.baseline, whole.baseline.baseline, "\(line)")
        }
    }

    /// Help, the version, completion scripts and every error are left to the whole tool, whose
    /// messages name `leak-audit run` and whose `--version` `run` alone does not know.
    func testWhatTheWholeToolAnswersIsNotParsedAsARun() {
        let lines = [
            ["run"], ["run", "--version", "program"], ["run", "-h"], ["run", "--help", "program"],
            ["run", "--generate-completion-script", "bash"], ["run", "program", "--generate-completion-script", "zsh"],
            ["run", "--experimental-dump-help"], ["run", "--timeout", "0", "program"], ["run", "--grace-period", "--version"],
            ["run", "--no-such-option", "program"], ["report", "saved.json"], ["--version"], [], ["help", "run"],
        ]
        for line in lines {
            XCTAssertNil(LeakAudit.parsedRun(line), "\(line)")
        }
    }
}
