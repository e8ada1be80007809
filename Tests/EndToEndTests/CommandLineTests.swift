import Foundation
import LeakAuditModel
import XCTest

/// The command line's contract: text report, escaping, where output goes, errors and exit codes,
/// and signals.
final class CommandLineTests: XCTestCase {
    func testTextReportGoesToStandardErrorWithFunctionAtFileLine() throws {
        let result = Harness.run([Harness.leakAudit, "run", try Harness.fixture("ViewModelRetention")])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "ViewModelRetention: opened and closed 3 screens\n")
        // The report points at the line that constructed the view models, not at their init.
        let line = try Harness.line(of: "LoginViewModel(title:", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertTrue(
            result.stderr.contains("EXCEEDED ViewModelRetention.LoginViewModel: max 1, peak 3, alive at exit 3"), result.stderr)
        XCTAssertTrue(result.stderr.contains("3 × allocated at\n      ViewModelRetention.Presenter.open(_:) at "), result.stderr)
        XCTAssertTrue(result.stderr.contains("/main.swift:\(line)\n"), result.stderr)
        XCTAssertFalse(result.stderr.contains("LoginViewModel.init"), result.stderr)
        XCTAssertTrue(result.stderr.contains("1 of 1 tracked type over budget"), result.stderr)
        // Not a terminal: no line is wider than 80 columns.
        for reportLine in result.stderr.split(separator: "\n") {
            XCTAssertLessThanOrEqual(reportLine.count, 80, String(reportLine))
        }
    }

    func testAProgramWithoutDebugInformationIsNamedInAWarning() throws {
        // The same program, once as built and once stripped of its DWARF (its symbols stay).
        let built = try Harness.fixture("ViewModelRetention")
        let stripped = try Harness.scratchFolder("stripped") + "/ViewModelRetention"
        let strip = Harness.run(["strip", "--strip-debug", "-o", stripped, built])
        XCTAssertEqual(strip.status, 0, strip.log)

        func debugWarnings(_ audit: Harness.Audit) -> [String] {
            audit.report.warnings.filter {
                $0.contains("has no debug information")
            }
        }
        let withDebugInformation = try Harness.audit(path: built)
        XCTAssertEqual(withDebugInformation.status, 1, withDebugInformation.stderr)
        XCTAssertEqual(debugWarnings(withDebugInformation), [])

        let withoutDebugInformation = try Harness.audit(path: stripped)
        XCTAssertEqual(withoutDebugInformation.status, 1, withoutDebugInformation.stderr)
        XCTAssertEqual(
            debugWarnings(withoutDebugInformation),
            [
                "symbolization: '\(stripped)' has no debug information, so its frames show no file or line; build it with debug information (swift build's default) and do not strip it"
            ])
        // The leak is still found and named by function.
        let model = try XCTUnwrap(
            withoutDebugInformation.report.types.first { $0.name == "ViewModelRetention.LoginViewModel" })
        XCTAssertEqual(model.exceeded, true)
        // Without lines, sites are grouped by stack: the three models allocated by the same code are
        // one group, the type's first instance (which registers the type) included.
        let groups = model.allocations
        XCTAssertEqual(groups.map(\.count), [3], "\(groups)")
    }

    func testCleanTextReportSaysSo() throws {
        let result = Harness.run([Harness.leakAudit, "run", try Harness.fixture("ViewModelRetention"), "clean"])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(
            result.stderr.contains("ok ViewModelRetention.LoginViewModel: max 1, peak 1, alive at exit 0"), result.stderr)
        XCTAssertTrue(result.stderr.contains("no type over budget"), result.stderr)
        XCTAssertFalse(result.stderr.contains("EXCEEDED"))
    }

    func testNamesFromTheTargetAreEscapedInTextAndJSON() throws {
        let expected =
            "Tricky \"quoted\" \\ ünïcödé 🦊 tab\there bell\u{7} <b>&amp; 100% a::b, c:d\nline\rcr \u{1B}[31mred\u{1B}[0m \u{202E}txt.exe"
        let audit = try Harness.audit("EscapingNames")
        XCTAssertEqual(audit.status, 1)
        XCTAssertEqual(try audit.trackedType("txt.exe").name, expected, "JSON round-trips the exact name")
        // The file itself: how JSON escapes the name is what is checked.
        let raw = try String(contentsOfFile: audit.jsonPath, encoding: .utf8)
        XCTAssertFalse(raw.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control characters in JSON")

        let text = Harness.run([Harness.leakAudit, "run", try Harness.fixture("EscapingNames")]).stderr
        // Too long for one 80-column line: shortened in the middle, the counts on the next line.
        XCTAssertTrue(
            text.contains("EXCEEDED Tricky \"quoted\" \\ ünïcödé 🦊 tab\\u{9}here bel…\\u{1b}[0m \\u{202e}txt.exe:\n  max 1"), text
        )
        XCTAssertFalse(
            text.unicodeScalars.contains { [7, 9, 0x1B, 0x202E].contains($0.value) }, "no raw control characters in text")
    }

    func testOutputFileAndFormatOptions() throws {
        let path = Harness.scratchPath("report.txt")
        let result = Harness.run([Harness.leakAudit, "run", "--output", path, try Harness.fixture("GenericBoxes")])
        XCTAssertEqual(result.status, 1)
        let report = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(report.contains("EXCEEDED GenericBoxes.Box<Swift.String>: max 2, peak 3"), report)
        XCTAssertFalse(result.stderr.contains("EXCEEDED"), "the report went to the file only")
        XCTAssertTrue(result.stderr.contains(path), "the log points to the report: \(result.stderr)")
    }

    func testOptionsAfterTheTargetBelongToTheTarget() throws {
        let audit = try Harness.audit("ViewModelRetention", ["clean", "--format", "text"])
        XCTAssertEqual(audit.report.target.arguments, ["clean", "--format", "text"])
        XCTAssertEqual(audit.status, 0)
    }

    func testUninstrumentedTargetIsNotAnEmptySuccess() throws {
        // A Swift program that opted into nothing, given nothing to watch, is checked for the
        // objects nothing reaches at its exit (UnreachableTests): an audit, not a failure to audit.
        let audit = try Harness.audit("Uninstrumented")
        XCTAssertEqual(audit.status, 0, audit.stderr)
        XCTAssertEqual(audit.report.target.attached, true)
        XCTAssertNil(audit.report.notAudited)

        // A program that is not Swift is told so, with no advice about opting types in.
        let notSwift = Harness.run([Harness.leakAudit, "run", "/bin/true"])
        XCTAssertEqual(notSwift.status, 3)
        XCTAssertTrue(notSwift.stderr.contains("'/bin/true' is not a Swift program"), notSwift.stderr)
        XCTAssertFalse(notSwift.stderr.contains("--census"), notSwift.stderr)
    }

    func testStaticallyLinkedRuntimeIsNotAnEmptySuccess() throws {
        let scratch = Harness.fixturesRoot.appendingPathComponent(".build-static").path
        let build = Harness.run([
            "swift", "build", "--static-swift-stdlib", "--product", "ViewModelRetention",
            "--package-path", Harness.fixturesRoot.path, "--scratch-path", scratch,
        ])
        XCTAssertEqual(build.status, 0, build.stdout + build.stderr)
        let audit = try Harness.audit(path: scratch + "/debug/ViewModelRetention")
        XCTAssertEqual(audit.status, 3)
        XCTAssertEqual(audit.report.notAudited, .staticRuntime)
        let text = Harness.run([Harness.leakAudit, "run", scratch + "/debug/ViewModelRetention"])
        XCTAssertEqual(text.status, 3)
        XCTAssertTrue(Harness.prose(text.stderr).contains("links the Swift runtime statically"), text.stderr)
        // --budget preloads a library that brings the shared runtime along, whose hooks the
        // program never calls: still not audited, never counts that only grow.
        let budgeted = try Harness.audit(
            path: scratch + "/debug/ViewModelRetention", extraOptions: ["--budget", "ViewModelRetention.*=1"])
        XCTAssertEqual(budgeted.status, 3, budgeted.stderr)
        XCTAssertEqual(budgeted.report.notAudited, .staticRuntime)
        XCTAssertEqual(budgeted.report.types.count, 0)
    }

    func testMissingTargetIsOneLineWithExitCode4() {
        let result = Harness.run([Harness.leakAudit, "run", "./no-such-binary"])
        XCTAssertEqual(result.status, 4)
        XCTAssertEqual(
            result.stderr,
            "leak-audit: error: target './no-such-binary' not found: check the path, or build it first (swift build)\n")
    }

    func testNonExecutableTargetIsOneLineWithExitCode4() {
        let readme = Harness.packageRoot.appendingPathComponent("Package.swift").path
        let result = Harness.run([Harness.leakAudit, "run", readme])
        XCTAssertEqual(result.status, 4)
        XCTAssertTrue(result.stderr.hasPrefix("leak-audit: error: target '\(readme)' is not executable"), result.stderr)
        XCTAssertEqual(result.stderr.filter { $0 == "\n" }.count, 1, result.stderr)
        let directory = Harness.run([Harness.leakAudit, "run", Harness.packageRoot.path])
        XCTAssertEqual(directory.status, 4)
    }

    func testADeviceGivenAsAFileIsOneLineAndExit64() throws {
        // /dev/zero never ends: reading it whole would fill memory and trap.
        for option in ["--config", "--baseline"] {
            let result = Harness.run([Harness.leakAudit, "run", option, "/dev/zero", try Harness.fixture("ViewModelRetention")])
            XCTAssertEqual(result.status, 64, result.stderr)
            XCTAssertTrue(result.stderr.hasPrefix("leak-audit: error: cannot read"), result.stderr)
            XCTAssertTrue(result.stderr.contains("'/dev/zero': larger than 64 megabytes"), result.stderr)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertEqual(result.stdout, "", "the target did not run")
        }
    }

    func testATargetThatOutrunsTheTimeoutIsStoppedAndReported() throws {
        let started = Date()
        let leaky = try Harness.audit("InterruptedWhileLeaking", ["leaky"], extraOptions: ["--timeout", "1"])
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "the fixture waits 60 s unless stopped")
        XCTAssertEqual(leaky.status, 1, "what it leaked before the timeout is reported: \(leaky.stderr)")
        XCTAssertEqual(try leaky.trackedType(".UploadTask").liveAtExit, 2)
        XCTAssertEqual(leaky.report.target.outcome, .signaled(signal: 15))
        let warnings = leaky.report.warnings
        XCTAssertTrue(warnings.contains { $0.contains("longer than --timeout 1 s and was stopped") }, "\(warnings)")
        // Without a leak, a stopped target is a failed target.
        let clean = try Harness.audit("InterruptedWhileLeaking", ["clean"], extraOptions: ["--timeout", "1"])
        XCTAssertEqual(clean.status, 2, clean.stderr)
        let zero = Harness.run([Harness.leakAudit, "run", "--timeout", "0", try Harness.fixture("InterruptedWhileLeaking")])
        XCTAssertEqual(zero.status, 64)
        XCTAssertTrue(zero.stderr.contains("--timeout '0' must be between 1 and 604800 seconds"), zero.stderr)
    }

    func testAnEmptyExecutableFileIsNotAProgramWithExitCode4() throws {
        let empty = URL(fileURLWithPath: Harness.scratchPath("empty"))
        try Data().write(to: empty)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: empty.path)
        let result = Harness.run([Harness.leakAudit, "run", empty.path])
        XCTAssertEqual(result.status, 4)
        XCTAssertEqual(
            result.stderr,
            "leak-audit: error: target '\(empty.path)' is not a program the system can run (empty, or neither ELF nor a #! script): pass a program or an .xctest bundle built by swift build\n"
        )
    }

    func testBadValuesAreNamedOnOneEscapedLine() throws {
        let target = try Harness.fixture("ViewModelRetention")
        // A newline in a pattern must not end the line: a CI log could read the rest as a command.
        let budget = Harness.run([Harness.leakAudit, "run", "--budget", "App.X\n::error::injected=x", target])
        XCTAssertEqual(budget.status, 64)
        XCTAssertEqual(budget.stderr.split(separator: "\n").count, 1, budget.stderr)
        XCTAssertTrue(budget.stderr.contains("'App.X\\u{a}::error::injected=x'"), budget.stderr)
        // A pattern that matches nothing is warned about with its control characters escaped.
        let warning = Harness.run([Harness.leakAudit, "run", "--budget", "App.\u{1B}[31mRed=1", target, "clean"])
        XCTAssertFalse(warning.stderr.contains("\u{1B}"), warning.stderr)
        XCTAssertTrue(warning.stderr.contains("App.\\u{1b}[31mRed"), warning.stderr)
        // Valid JSON whose number does not fit is not called invalid JSON.
        let config = URL(fileURLWithPath: Harness.scratchPath("config.json"))
        try Data(#"{"version": 1.5}"#.utf8).write(to: config)
        let version = Harness.run([Harness.leakAudit, "run", "--config", config.path, target])
        XCTAssertEqual(version.status, 64)
        XCTAssertTrue(version.stderr.contains("not a whole number"), version.stderr)
        // A negative grace period is a bad value, not a missing one.
        let grace = Harness.run([Harness.leakAudit, "run", "--grace-period", "-5", target])
        XCTAssertEqual(grace.status, 64)
        XCTAssertTrue(grace.stderr.contains("--grace-period '-5' must be between 0 and 600000"), grace.stderr)
    }

    func testUsageErrorsExit64() throws {
        let missing = Harness.run([Harness.leakAudit, "run"])
        XCTAssertEqual(missing.status, 64)
        XCTAssertTrue(missing.stderr.contains("Missing expected argument '<target>'"), missing.stderr)
        let format = Harness.run([Harness.leakAudit, "run", "--format", "yaml", try Harness.fixture("ViewModelRetention")])
        XCTAssertEqual(format.status, 64)
        XCTAssertTrue(format.stderr.contains("yaml"), format.stderr)
        let output = Harness.run([
            Harness.leakAudit, "run", "--output", "/no/such/dir/report.json", try Harness.fixture("ViewModelRetention"),
        ])
        XCTAssertEqual(output.status, 64)
        XCTAssertTrue(output.stderr.contains("/no/such/dir/report.json"), output.stderr)
        XCTAssertEqual(output.stdout, "", "the target did not run")
    }

    func testOnATerminalTheReportFitsItsWidth() throws {
        // A real terminal, 100 columns wide: a pseudo-terminal from script(1), sized with stty. The
        // report uses the terminal's width (a log or a pipe gets 80 columns). TerminalTests reads a
        // tmux pane for what a person sees on the screen.
        // A terminal that shows colour: the colours and the status line's escapes take no columns.
        let fixture = try Harness.fixture("ViewModelRetention")
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "xterm-256color"
        environment["NO_COLOR"] = nil
        let result = Harness.run(
            ["script", "-q", "-e", "-c", "stty cols 100 rows 50; \(Harness.leakAudit) run \(fixture)", "/dev/null"],
            environment: environment, directory: Harness.packageRoot.path)
        XCTAssertEqual(result.status, 1, result.log)
        XCTAssertTrue(result.stdout.contains("\u{1B}[1;31mEXCEEDED\u{1B}[0m"), result.stdout)
        let lines = result.stdout.replacingOccurrences(of: "\r", with: "")
            .replacing(#/\x{1B}(\[[0-9;?]*[A-Za-z]|[78])/#, with: "").split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("EXCEEDED ViewModelRetention.LoginViewModel: max 1, peak 3") }, result.stdout)
        // 96 columns: whole on this terminal, shortened in a log.
        let line = try Harness.line(of: "LoginViewModel(title:", inFixtureSource: "Sources/ViewModelRetention/main.swift")
        XCTAssertTrue(
            lines.contains(
                "      ViewModelRetention.Presenter.open(_:) at Fixtures/Sources/ViewModelRetention/main.swift:\(line)"),
            result.stdout)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 100 }, result.stdout)
        let log = Harness.run([Harness.leakAudit, "run", fixture], directory: Harness.packageRoot.path)
        XCTAssertTrue(
            log.stderr.contains("      ViewModelRetention.Presenter.open(_:) at Fixtures/…/main.swift:\(line)"), log.stderr)
    }

    func testNoSubcommandIsAUsageError() {
        let bare = Harness.run([Harness.leakAudit])
        XCTAssertEqual(bare.status, 64)
        XCTAssertTrue(bare.stderr.contains("USAGE: leak-audit <subcommand>"), bare.stderr)
        XCTAssertTrue(
            bare.stderr.hasSuffix("leak-audit: error: missing subcommand; run a target with 'leak-audit run <target>'\n"))
    }

    func testABadBudgetIsOneLineNamingIt() throws {
        for pattern in ["Foo", "App.*=x", "=3"] {
            let result = Harness.run([Harness.leakAudit, "run", "--budget", pattern, try Harness.fixture("ViewModelRetention")])
            XCTAssertEqual(result.status, 64, pattern)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line, no usage: \(result.stderr)")
            XCTAssertTrue(
                result.stderr.hasPrefix("leak-audit: error: budget '\(pattern)' (--budget) is not PATTERN=N"), result.stderr)
            XCTAssertEqual(result.stdout, "", "the target did not run")
        }
    }

    func testHelpDocumentsExitCodes() {
        let help = Harness.run([Harness.leakAudit, "run", "--help"])
        XCTAssertEqual(help.status, 0)
        for line in [
            "Exit codes:", "0   the target exited 0", "1   at least one type exceeded", "2   no type exceeded",
            "3   the target could not be audited", "4   the target could not be started", "64  usage",
        ] {
            XCTAssertTrue(help.stdout.contains(line), "missing '\(line)' in:\n\(help.stdout)")
        }
        let version = Harness.run([Harness.leakAudit, "--version"])
        XCTAssertEqual(version.status, 0)
        XCTAssertFalse(version.stdout.isEmpty)
    }

    func testSignalsReachTheTargetAndTheReportIsStillWritten() throws {
        for (signal, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            let path = Harness.scratchPath("report.json")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Harness.leakAudit)
            process.arguments = ["run", "--format", "json", "--output", path, try Harness.fixture("InterruptedWhileLeaking")]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Wait until the target says it is ready (it leaked two uploads by then).
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("ready") {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
            }
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 1, name)
            let report = try Harness.readReport(path)
            XCTAssertEqual(report.target.outcome, .signaled(signal: signal), name)
            XCTAssertEqual(report.types.first?.peakLive, 2, name)
            // The report says it is partial, and why.
            let warnings = report.warnings
            XCTAssertTrue(
                warnings.contains {
                    $0.hasPrefix("leak-audit received \(name) and passed it to the target: the report is partial")
                },
                "\(name): \(warnings)")
        }
    }
}

/// What --output does with what is already at its path, and arguments that are not UTF-8.
final class OutputAndArgumentTests: XCTestCase {
    func testOutputWritesThroughASymlinkInsteadOfReplacingIt() throws {
        let directory = try Harness.scratchFolder("output")
        let real = directory + "/real.json"
        let link = directory + "/link.json"
        try "".write(toFile: real, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let result = Harness.run([
            Harness.leakAudit, "run", "--format", "json", "--output", link, try Harness.fixture("GenericBoxes"),
        ])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link), real, "the link is still a link")
        XCTAssertTrue(try String(contentsOfFile: real, encoding: .utf8).contains("\"schemaVersion\""))
    }

    func testOutputIsLeftAloneWhenTheTargetCannotStart() throws {
        let directory = try Harness.scratchFolder("output")
        let existing = directory + "/report.json"
        try "{\"old\": 1}".write(toFile: existing, atomically: true, encoding: .utf8)
        let result = Harness.run([Harness.leakAudit, "run", "--output", existing, directory + "/missing"])
        XCTAssertEqual(result.status, 4)
        XCTAssertEqual(try String(contentsOfFile: existing, encoding: .utf8), "{\"old\": 1}")
        let fresh = directory + "/fresh.json"
        _ = Harness.run([Harness.leakAudit, "run", "--output", fresh, directory + "/missing"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh), "no empty report is left behind")
    }

    func testAFullDeviceIsAnErrorNotASilentSuccess() throws {
        let result = Harness.run([
            Harness.leakAudit, "run", "--output", "/dev/full", try Harness.fixture("GenericBoxes"), "clean",
        ])
        XCTAssertEqual(result.status, 64)
        XCTAssertTrue(result.stderr.contains("cannot write the report to '/dev/full'"), result.stderr)
    }

    func testArgumentsThatAreNotUTF8ReachTheTargetUnchanged() throws {
        // printf writes $1's bytes; od shows them in octal.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Harness.leakAudit)
        let script = "printf %s \"$1\" | od -An -tx1"
        process.arguments = ["run", "/bin/sh", "-c", script, "sh"]
        // Swift strings cannot hold a lone 0xFF byte: pass it through the environment and let a
        // shell put it into argv instead.
        let wrapper = Process()
        wrapper.executableURL = URL(fileURLWithPath: "/bin/sh")
        wrapper.arguments = ["-c", "\"$0\" run /bin/sh -c '\(script)' sh \"$(printf 'a\\377b')\"", Harness.leakAudit]
        let out = Pipe()
        wrapper.standardOutput = out
        wrapper.standardError = FileHandle.nullDevice
        try wrapper.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        wrapper.waitUntilExit()
        XCTAssertEqual(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "61 ff 62")
        _ = process
    }

    func testABareNameInTheWorkingDirectorySaysToWriteDotSlash() throws {
        let directory = try Harness.fixturesBinDirectory.get()
        let result = Harness.run([Harness.leakAudit, "run", "GenericBoxes"], directory: directory)
        XCTAssertEqual(result.status, 4)
        XCTAssertTrue(result.stderr.contains("write './GenericBoxes'"), result.stderr)
    }

    func testLocalTypesHaveTheSameNameInEveryProcess() throws {
        let directory = try Harness.scratchFolder("output")
        let script = directory + "/twice.sh"
        let fixture = try Harness.fixture("UninstrumentedGallery")
        try "#!/bin/sh\n\(fixture)\n\(fixture)\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let audit = try Harness.audit(path: script, extraOptions: ["--budget", "*SessionToken=1"])
        XCTAssertEqual(audit.report.target.attachedProcesses, 2)
        let tokens = audit.report.types.filter { $0.name.hasSuffix("SessionToken") }
        XCTAssertEqual(tokens.count, 1, "one entry across both processes: \(audit.report.types.map(\.name))")
        XCTAssertEqual(tokens.first?.name, "UninstrumentedGallery.(unknown context).(unknown context).SessionToken")
        XCTAssertEqual(tokens.first?.allocatedTotal, 2)
        XCTAssertEqual(tokens.first?.exceeded, false)
    }
}
