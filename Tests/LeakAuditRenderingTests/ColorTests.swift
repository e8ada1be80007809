import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditPresentation
@testable import LeakAuditRendering

/// The colored text report (`--color`, `NO_COLOR`): the same text as the plain one with ANSI
/// styles around its parts, and never an escape from the target.
final class ColorTests: XCTestCase {
    private static let cwd = "/home/dev/project"

    private func frame(
        _ function: String?, _ file: String? = nil, _ line: Int? = nil, module: String? = "/home/dev/project/.build/debug/App"
    ) -> SymbolizedFrame {
        SymbolizedFrame(address: 0x1000, module: module, moduleOffset: 0x1000, function: function, file: file, line: line)
    }

    private func report(
        types: [AuditReport.TrackedType], outcome: TargetOutcome = .exited(code: 0), path: String = ".build/debug/App",
        warnings: [String] = []
    ) -> AuditReport {
        AuditReport(
            tool: .init(name: "leak-audit", version: "0.1.0"),
            target: .init(path: path, arguments: [], attached: true, attachedProcesses: 1, outcome: outcome),
            types: types, droppedRecords: 0, tornRecords: 0, warnings: warnings)
    }

    /// One type over budget allocated from the user's code through a library, and one within.
    private func leaky(name: String = "App.LoginViewModel", outcome: TargetOutcome = .exited(code: 0)) -> AuditReport {
        let stack = [
            frame("App.LoginViewModel.init() -> App.LoginViewModel", "\(Self.cwd)/Sources/App/Login.swift", 11),
            frame("App.Presenter.open() -> ()", "\(Self.cwd)/Sources/App/Presenter.swift", 29),
            frame("dispatch_call_block", nil, nil, module: "/usr/lib/swift/linux/libdispatch.so"),
            frame("App_main", "\(Self.cwd)/Sources/App/main.swift", 43),
        ]
        return report(
            types: [
                AuditReport.TrackedType(
                    name: name, max: 1, peakLive: 3, liveAtExit: 3, allocatedTotal: 3,
                    allocations: [.init(count: 3, frames: stack, truncated: false)]),
                AuditReport.TrackedType(
                    name: "App.Settings", max: 2, peakLive: 1, liveAtExit: 0, allocatedTotal: 1, allocations: []),
            ], outcome: outcome, warnings: ["a warning"])
    }

    /// The text without the SGR escapes TextEmphasis writes.
    private func withoutStyles(_ text: String) -> String {
        text.replacing(#/\x{1B}\[[0-9;]*m/#, with: "")
    }

    func testPlainByDefaultAndTheSameTextWhenColored() {
        let plain = TextReportRenderer(workingDirectory: Self.cwd, width: 80).render(leaky())
        XCTAssertFalse(plain.contains("\u{1B}"), plain)
        let colored = TextReportRenderer(workingDirectory: Self.cwd, width: 80, colored: true).render(leaky())
        XCTAssertNotEqual(colored, plain)
        XCTAssertEqual(withoutStyles(colored), plain, "colour adds styles and changes no character")
        // Lines are fitted before they are styled: the escapes take no columns.
        let narrow = TextReportRenderer(workingDirectory: Self.cwd, width: 40, colored: true).render(leaky())
        XCTAssertEqual(withoutStyles(narrow), TextReportRenderer(workingDirectory: Self.cwd, width: 40).render(leaky()))
    }

    func testTheVerdictLabelsNamesAndFramesAreStyled() {
        let text = TextReportRenderer(workingDirectory: Self.cwd, width: 100, colored: true).render(leaky())
        let red = "\u{1B}[1;31m"
        let bold = "\u{1B}[1m"
        let reset = "\u{1B}[0m"
        XCTAssertTrue(text.contains("\(red)EXCEEDED\(reset) \(bold)App.LoginViewModel\(reset): max 1, peak 3"), text)
        XCTAssertTrue(text.contains("  \u{1B}[32mok\(reset) \(bold)App.Settings\(reset): max 2"), text)
        XCTAssertTrue(text.contains("\(bold)within budget:\(reset)"), text)
        // The user's frames: their place in cyan; the library's frames: dim.
        XCTAssertTrue(text.contains("App.Presenter.open() at \u{1B}[36mSources/App/Presenter.swift:29\(reset)"), text)
        XCTAssertTrue(text.contains("      \u{1B}[2m… 1 frame in libdispatch\(reset)"), text)
        XCTAssertTrue(text.contains("\u{1B}[33mwarning:\(reset) a warning"), text)
        XCTAssertTrue(
            text.hasSuffix("\(red)leak-audit: 1 of 2 tracked types over budget; '.build/debug/App' exited with code 0\(reset)\n"),
            text)
    }

    func testTheVerdictsColourSaysHowTheRunEnded() {
        let renderer = TextReportRenderer(workingDirectory: Self.cwd, colored: true)
        let clean = report(types: [
            AuditReport.TrackedType(name: "A", max: 1, peakLive: 1, liveAtExit: 0, allocatedTotal: 1, allocations: [])
        ])
        XCTAssertTrue(
            renderer.render(clean).hasSuffix(
                "\u{1B}[32mleak-audit: no type over budget (1 tracked); '.build/debug/App' exited with code 0\u{1B}[0m\n"))
        var failed = clean
        failed.target.outcome = TargetOutcome.exited(code: 3)
        XCTAssertTrue(renderer.render(failed).contains("\u{1B}[33mleak-audit: no type over budget"), renderer.render(failed))
    }

    func testLibraryFramesShownInFullAreDim() {
        let text = TextReportRenderer(workingDirectory: Self.cwd, verbose: true, colored: true).render(leaky())
        XCTAssertTrue(
            text.contains("      \u{1B}[2mdispatch_call_block in /usr/lib/swift/linux/libdispatch.so+0x1000\u{1B}[0m"), text)
    }

    func testHostileNamesStayEscapedWhenColored() {
        // A name with a colour of its own, a screen clear, a title change and a right-to-left override.
        let hostile = leaky(name: "App.Evil\u{1B}[2J\u{1B}]0;pwned\u{7}\u{1B}[31mred\u{202E}txt", outcome: .exited(code: 0))
        var withPath = hostile
        withPath.target.path = "./evil\u{1B}[0m\u{9B}31m"
        for width in [nil, 40, 80] {
            let text = TextReportRenderer(workingDirectory: Self.cwd, width: width, colored: true).render(withPath)
            // Every escape left is one of the renderer's own styles.
            let remaining = withoutStyles(text)
            XCTAssertFalse(
                remaining.unicodeScalars.contains {
                    $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B || $0.value == 0x202E
                },
                remaining)
            let styles = text.matches(of: #/\x{1B}\[([0-9;]*)m/#).map { String($0.output.1) }
            XCTAssertEqual(Set(styles).subtracting(TextEmphasis.allCases.map(\.parameters) + ["0"]), [], text)
            XCTAssertEqual(remaining, TextReportRenderer(workingDirectory: Self.cwd, width: width).render(withPath))
        }
        let text = TextReportRenderer(workingDirectory: Self.cwd, colored: true).render(withPath)
        XCTAssertTrue(
            text.contains("\u{1B}[1mApp.Evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{1b}[31mred\\u{202e}txt\u{1B}[0m: max 1"), text)
        XCTAssertTrue(text.contains("'./evil\\u{1b}[0m\\u{9b}31m' exited with code 0"), text)
    }

    func testColorChoiceFollowsTheTerminalNoColorAndTheFlag() {
        let terminal = ["TERM": "xterm-256color"]
        XCTAssertTrue(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: terminal))
        XCTAssertFalse(ColorChoice.auto.colorsText(destinationIsTerminal: false, environment: terminal), "a pipe or a file")
        // NO_COLOR: present and not empty, whatever its value (no-color.org).
        XCTAssertFalse(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: ["TERM": "xterm", "NO_COLOR": "1"]))
        XCTAssertFalse(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: ["TERM": "xterm", "NO_COLOR": "0"]))
        XCTAssertTrue(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: ["TERM": "xterm", "NO_COLOR": ""]))
        // A dumb or unknown terminal, as git has it.
        XCTAssertFalse(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: ["TERM": "dumb"]))
        XCTAssertFalse(ColorChoice.auto.colorsText(destinationIsTerminal: true, environment: [:]))
        // The flag wins over NO_COLOR and over what the destination is.
        XCTAssertTrue(ColorChoice.always.colorsText(destinationIsTerminal: false, environment: ["NO_COLOR": "1"]))
        XCTAssertFalse(ColorChoice.never.colorsText(destinationIsTerminal: true, environment: terminal))
        XCTAssertEqual(ColorChoice(rawValue: "always"), .always)
        XCTAssertNil(ColorChoice(rawValue: "yes"))
    }
}
