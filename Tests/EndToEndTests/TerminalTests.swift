import Foundation
import LeakAuditModel
import XCTest

/// leak-audit on a real terminal: the live status line while the target runs, the colored report,
/// and what is left of both where standard error is not a terminal. The terminal is a detached
/// tmux session of a fixed size, read with `capture-pane` while the target runs.
final class TerminalTests: XCTestCase {
    /// A tmux server of its own (its socket in a fresh directory), with one session running
    /// `command` in a 100×24 pane.
    private final class TerminalSession {
        let tmux: String
        let socket: String
        let name = "leak-audit"

        init(command: String) throws {
            guard
                let tmux = ["/usr/bin/tmux", "/usr/local/bin/tmux"].first(where: {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            else {
                throw XCTSkip("tmux is not installed (apt-get install tmux): the terminal tests need a real terminal to read")
            }
            self.tmux = tmux
            let directory = URL(fileURLWithPath: try Harness.scratchFolder("tmux"))
            socket = directory.appendingPathComponent("socket").path
            // The server that the client forks keeps every descriptor the client had, among them
            // the ones by which Foundation sees the client end: they are closed before tmux starts.
            let closingInherited =
                #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done 2>/dev/null; exec "$@""#
            let started = Harness.run(
                [
                    "bash", "-c", closingInherited, "bash", tmux, "-S", socket, "new-session", "-d", "-x", "100", "-y", "24",
                    "-s", name, command,
                ],
                environment: Self.environment)
            guard started.status == 0 else { throw HarnessError.buildFailed("tmux new-session failed: \(started.log)") }
        }

        /// The test's environment, but not inside another tmux.
        private static var environment: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["TMUX"] = nil
            return environment
        }

        /// Runs a tmux command on this server; a nested tmux (TMUX set) is not one.
        @discardableResult
        func run(_ arguments: [String]) -> Harness.CommandResult {
            Harness.run([tmux, "-S", socket] + arguments, environment: Self.environment)
        }

        /// The pane's rows as text; with `escapes`, with the escapes that style them.
        func screen(escapes: Bool = false) -> [String] {
            let captured = run(["capture-pane", "-p"] + (escapes ? ["-e"] : []) + ["-t", name]).stdout
            return captured.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }

        /// Every screen read until `predicate` holds for one (returned last), at most 60 s.
        func screens(until predicate: ([String]) -> Bool) -> [[String]] {
            var screens: [[String]] = []
            let deadline = Date().addingTimeInterval(60)
            repeat {
                let screen = self.screen()
                screens.append(screen)
                if predicate(screen) { break }
                usleep(50_000)
            } while Date() < deadline
            return screens
        }

        func sendKeys(_ keys: String...) { run(["send-keys", "-t", name] + keys) }

        deinit {
            run(["kill-server"])
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: socket).deletingLastPathComponent().path)
        }
    }

    /// The pane's command: leak-audit on SlowScreens from the package root, with no NO_COLOR from
    /// the test's environment; then its exit status, a wait for a key, and 30 numbers whose last
    /// ends no line, to show whether the whole terminal scrolls again.
    private func command(_ options: [String] = []) throws -> String {
        let fixture = try Harness.fixture("SlowScreens")
        let leakAudit = ([Harness.leakAudit, "run"] + options + [fixture]).map { "'\($0)'" }.joined(separator: " ")
        return "cd '\(Harness.packageRoot.path)' && unset NO_COLOR; \(leakAudit); printf 'exit status %d\\n' $?; "
            + "read key; seq 1 29; printf 30; exec sleep 600"
    }

    /// True for the status line: `⠋ leak-audit 1.2 s · 1 process · …`.
    private static func isStatusLine(_ row: String) -> Bool {
        row.contains("leak-audit ") && row.contains(" · ")
    }

    /// The target's own rows, which must read exactly as it wrote them.
    private static func assertTargetRowsAreWhole(_ screen: [String], file: StaticString = #filePath, line: UInt = #line) {
        for row in screen where row.hasPrefix("SlowScreens") || row.contains("closing it") {
            XCTAssertNotNil(
                row.wholeMatch(of: #/SlowScreens: (screen [1-4] of 4 open, closing it…( closed)?|done)/#),
                "a row of the target's was broken: '\(row)' in\n\(screen.joined(separator: "\n"))", file: file, line: line)
        }
    }

    func testTheStatusLineShowsOnTheBottomRowWhileTheTargetRunsAndIsGoneBeforeTheReport() throws {
        let textFile = Harness.scratchPath("report.txt")
        let session = try TerminalSession(command: try command(["--output-text", textFile]))
        let screens = session.screens { $0.contains { $0.hasPrefix("exit status") } }
        let final = try XCTUnwrap(screens.last)
        XCTAssertTrue(final.contains("exit status 1"), final.joined(separator: "\n"))

        // While the target ran: the status line on the bottom row and nowhere else, with the type
        // closest to its budget; the target's rows whole around it.
        let running = screens.dropLast().filter { $0.last.map(Self.isStatusLine) == true }
        XCTAssertFalse(running.isEmpty, "no screen showed the status line:\n\(final.joined(separator: "\n"))")
        for screen in screens {
            Self.assertTargetRowsAreWhole(screen)
            XCTAssertFalse(screen.dropLast().contains(where: Self.isStatusLine), screen.joined(separator: "\n"))
        }
        XCTAssertTrue(
            running.contains { $0.last?.contains("1 process") == true && $0.last?.contains("ScreenViewModel ") == true },
            running.compactMap(\.last).joined(separator: "\n"))

        // The end: every row of the target's, then the report, and no status line.
        XCTAssertFalse(final.contains(where: Self.isStatusLine), final.joined(separator: "\n"))
        Self.assertTargetRowsAreWhole(final)
        let closed = final.filter { $0.hasSuffix("closing it… closed") }
        XCTAssertEqual(closed.count, 4, final.joined(separator: "\n"))
        let done = try XCTUnwrap(final.firstIndex(of: "SlowScreens: done"), final.joined(separator: "\n"))
        let exceeded = try XCTUnwrap(
            final.firstIndex { $0.hasPrefix("EXCEEDED SlowScreens.ScreenViewModel: max 2, peak 4") },
            final.joined(separator: "\n"))
        XCTAssertLessThan(done, exceeded)
        XCTAssertTrue(
            final.contains { $0.hasPrefix("leak-audit: 1 of 1 tracked type over budget") }, final.joined(separator: "\n"))
        // On a terminal the report is colored; the same report in a file is not.
        let styled = session.screen(escapes: true)
        XCTAssertTrue(styled.contains { $0.contains("\u{1B}[") && $0.contains("EXCEEDED") }, styled.joined(separator: "\n"))
        let text = try String(contentsOfFile: textFile, encoding: .utf8)
        XCTAssertTrue(text.contains("EXCEEDED SlowScreens.ScreenViewModel: max 2, peak 4"), text)
        XCTAssertFalse(text.utf8.contains(0x1B), text)

        // The whole terminal scrolls again: the last number lands on the bottom row.
        session.sendKeys("Enter")
        let after = session.screens { $0.last == "30" }
        XCTAssertEqual(after.last?.last, "30", after.last?.joined(separator: "\n") ?? "")
    }

    func testAnInterruptedRunGivesTheTerminalBackAndStillWritesTheReport() throws {
        let session = try TerminalSession(command: try command())
        // Interrupted once the status line says a type went over budget.
        let running = session.screens { $0.last.map { Self.isStatusLine($0) && $0.contains("1 over budget") } == true }
        XCTAssertEqual(running.last?.last?.contains("1 over budget"), true, running.last?.joined(separator: "\n") ?? "")
        session.sendKeys("C-c")
        let screens = session.screens { $0.contains { $0.hasPrefix("exit status") } }
        let final = try XCTUnwrap(screens.last)
        XCTAssertTrue(final.contains("exit status 1"), final.joined(separator: "\n"))
        XCTAssertFalse(final.contains(where: Self.isStatusLine), final.joined(separator: "\n"))
        XCTAssertTrue(final.contains { $0.hasPrefix("warning: leak-audit received SIGINT") }, final.joined(separator: "\n"))
        session.sendKeys("Enter")
        let after = session.screens { $0.last == "30" }
        XCTAssertEqual(after.last?.last, "30", after.last?.joined(separator: "\n") ?? "")
    }

    func testQuietShowsNoStatusLineAndNeverColorShowsNoColor() throws {
        let quiet = try TerminalSession(command: try command(["--quiet"]))
        let screens = quiet.screens { $0.contains { $0.hasPrefix("exit status") } }
        XCTAssertFalse(screens.contains { $0.contains(where: Self.isStatusLine) }, screens.last?.joined(separator: "\n") ?? "")
        // A failing run still has its report.
        XCTAssertTrue(screens.last?.contains { $0.hasPrefix("EXCEEDED SlowScreens.ScreenViewModel") } == true)

        let plain = try TerminalSession(command: try command(["--color", "never"]))
        _ = plain.screens { $0.contains { $0.hasPrefix("exit status") } }
        let styled = plain.screen(escapes: true)
        XCTAssertTrue(styled.contains { $0.hasPrefix("EXCEEDED SlowScreens.ScreenViewModel") }, styled.joined(separator: "\n"))
        XCTAssertFalse(styled.contains { $0.contains("\u{1B}") }, styled.joined(separator: "\n"))
    }

    func testWhereStandardErrorIsNotATerminalThereIsNoEscapeAtAll() throws {
        // As in a CI log: a terminal type set, standard error a pipe.
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "xterm-256color"
        environment["NO_COLOR"] = nil
        let fixture = try Harness.fixture("SlowScreens")
        let result = Harness.run([Harness.leakAudit, "run", fixture], environment: environment)
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertTrue(result.stderr.contains("EXCEEDED SlowScreens.ScreenViewModel: max 2, peak 4"), result.log)
        XCTAssertFalse(result.stderr.utf8.contains(0x1B), result.log)
        XCTAssertFalse(result.stdout.utf8.contains(0x1B), result.log)
        XCTAssertEqual(result.stdout.split(separator: "\n").last, "SlowScreens: done")

        // --color always colors a pipe and a file too, and still draws no status line there.
        let textFile = Harness.scratchPath("report.txt")
        let always = Harness.run(
            [Harness.leakAudit, "run", "--color", "always", "--output-text", textFile, fixture], environment: environment)
        XCTAssertTrue(always.stderr.contains("\u{1B}[1;31mEXCEEDED\u{1B}[0m"), always.log)
        XCTAssertTrue(try String(contentsOfFile: textFile, encoding: .utf8).contains("\u{1B}[1;31mEXCEEDED\u{1B}[0m"))
        XCTAssertFalse(always.stderr.contains("\u{1B}7"), always.log)
        XCTAssertFalse(always.stderr.contains("r\u{1B}8"), always.log)
    }

    func testQuietWritesNothingForACleanRunAndTheReportForAFailingOne() throws {
        let target = try Harness.fixture("ViewModelRetention")
        let clean = Harness.run([Harness.leakAudit, "run", "--quiet", target, "clean"])
        XCTAssertEqual(clean.status, 0, clean.log)
        XCTAssertEqual(clean.stderr, "", clean.log)
        XCTAssertEqual(clean.stdout, "ViewModelRetention: opened and closed 3 screens\n", "the target's own output is untouched")
        let leaky = Harness.run([Harness.leakAudit, "run", "-q", target])
        XCTAssertEqual(leaky.status, 1, leaky.log)
        XCTAssertTrue(leaky.stderr.contains("EXCEEDED ViewModelRetention.LoginViewModel"), leaky.log)
        // Files are written either way.
        let path = Harness.scratchPath("report.json")
        let file = Harness.run([Harness.leakAudit, "run", "--quiet", "--output-json", path, target, "clean"])
        XCTAssertEqual(file.status, 0, file.log)
        XCTAssertEqual(file.stderr, "", file.log)
        XCTAssertEqual(try Harness.readReport(path).verdict, .clean)
    }

    func testReportRendersASavedRunQuietlyAndInColourAsRunWould() throws {
        let target = try Harness.fixture("ViewModelRetention")
        let directory = URL(fileURLWithPath: try Harness.scratchFolder("saved"))
        let clean = directory.appendingPathComponent("clean.json").path
        let leaky = directory.appendingPathComponent("leaky.json").path
        _ = Harness.run([Harness.leakAudit, "run", "--output-json", clean, target, "clean"])
        _ = Harness.run([Harness.leakAudit, "run", "--output-json", leaky, target])
        let quietClean = Harness.run([Harness.leakAudit, "report", "--quiet", clean])
        XCTAssertEqual(quietClean.status, 0, quietClean.log)
        XCTAssertEqual(quietClean.stdout, "", quietClean.log)
        let quietDiff = Harness.run([Harness.leakAudit, "report", "--quiet", "--diff", leaky, clean])
        XCTAssertEqual(quietDiff.status, 0, quietDiff.log)
        XCTAssertEqual(quietDiff.stdout, "", quietDiff.log)
        let colored = Harness.run([Harness.leakAudit, "report", "--quiet", "--color", "always", leaky])
        XCTAssertEqual(colored.status, 1, colored.log)
        XCTAssertTrue(colored.stdout.contains("\u{1B}[1;31mEXCEEDED\u{1B}[0m"), colored.log)
        let plain = Harness.run([Harness.leakAudit, "report", leaky])
        XCTAssertFalse(plain.stdout.utf8.contains(0x1B), plain.log)
        XCTAssertEqual(colored.stdout.replacing(#/\x{1B}\[[0-9;]*m/#, with: ""), plain.stdout)
    }

    func testUnreachableObjectsReadOnATerminalAsTheirOwnSectionWithTheVerdictInRed() throws {
        // The golden report of leak-audit inspect's kind: a cycle through a closure and an object
        // alone, no stacks recorded.
        let saved = Harness.packageRoot.appendingPathComponent(
            "Tests/LeakAuditRenderingTests/Golden/unreachable-unwatched.json"
        ).path
        let session = try TerminalSession(
            command: "cd '\(Harness.packageRoot.path)' && unset NO_COLOR; '\(Harness.leakAudit)' report '\(saved)'; "
                + "printf 'exit status %d\\n' $?; exec sleep 600")
        let screen = session.screens(until: { $0.contains("exit status 1") }).last ?? []
        let text = screen.joined(separator: "\n")
        for row in [
            "unreachable: 21 objects (2 KB) that nothing reaches, in 11 structures (1 process checked)",
            "  UNREACHABLE 10 × cycle of 2 objects (1.9 KB): Request.handler → Handler → (captured) → Request",
            "  UNREACHABLE 1 × over-retained Token (96 bytes)",
            "  where they were allocated is unknown: no allocation was recorded",
            "exit status 1",
        ] {
            XCTAssertTrue(screen.contains(row), "no row '\(row)' in\n\(text)")
        }
        XCTAssertTrue(
            text.contains("leak-audit: UNREACHABLE: 21 objects of the program's types (2 KB) that nothing reaches, in 11"),
            text)
        XCTAssertTrue(screen.allSatisfy { $0.count <= 100 }, text)
        // A terminal gets colour by default: the label and the verdict in red, the heading bold.
        let styled = session.screen(escapes: true).joined(separator: "\n")
        XCTAssertTrue(styled.contains("\u{1B}[1m\u{1B}[31mUNREACHABLE\u{1B}[0m"), styled)
        XCTAssertTrue(styled.contains("\u{1B}[1m\u{1B}[31mleak-audit: UNREACHABLE:"), styled)
    }

    func testABadColorIsAUsageErrorNamingTheFlag() throws {
        let result = Harness.run([Harness.leakAudit, "run", "--color", "sometimes", try Harness.fixture("ViewModelRetention")])
        XCTAssertEqual(result.status, 64, result.log)
        XCTAssertTrue(
            result.stderr.hasPrefix(
                "Error: The value 'sometimes' is invalid for '--color <when>'. Please provide one of 'auto', 'always' or 'never'."
            ),
            result.log)
        XCTAssertEqual(result.stdout, "", "the target did not run")
    }

    func testTheSlowScreensCleanTwinReportsNothing() throws {
        let audit = try Harness.audit("SlowScreens", ["clean"])
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let type = try audit.trackedType(".ScreenViewModel")
        XCTAssertEqual(type.exceeded, false)
        XCTAssertEqual(type.liveAtExit, 0)
        XCTAssertEqual(audit.report.exceededTypes.count, 0)
    }
}
