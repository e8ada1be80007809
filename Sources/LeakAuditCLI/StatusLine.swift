import LeakAuditCore
import LeakAuditModel
import LeakAuditPresentation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Set while the terminal's bottom row is reserved: a signal that stops or ends leak-audit then
/// gives the row back first.
private let terminalReserved = Atomic<Bool>(false)
/// Set when SIGTSTP gave the terminal back before leak-audit stopped: it is reserved again when
/// leak-audit runs on in the foreground.
private let releasedForStop = Atomic<Bool>(false)

/// Gives the whole terminal back and erases the bottom row, keeping the cursor where it is: the
/// scroll region reset (DECSTBM, which homes the cursor) and the row erased between a save and a
/// restore of the cursor (DECSC, DECRC). Bytes fixed in advance, one write: safe in a signal
/// handler, and right whatever the terminal's size (row 999 is the last).
private func releaseTerminal() {
    let sequence: StaticString = "\u{1B}7\u{1B}[r\u{1B}[999;1H\u{1B}[2K\u{1B}8"
    _ = write(2, sequence.utf8Start, sequence.utf8CodeUnitCount)
}

/// SIGTSTP (^Z): the shell gets the whole terminal back, then leak-audit stops as it would have.
private func stopWithTerminalReleased(_ signalNumber: Int32) {
    if terminalReserved.exchange(false, ordering: .acquiringAndReleasing) {
        releaseTerminal()
        releasedForStop.store(true, ordering: .releasing)
    }
    signal(SIGTSTP, SIG_DFL)
    raise(SIGTSTP)
}

/// A signal that ends leak-audit after the target ended (while stacks are symbolized): the
/// terminal is given back, then the signal does what it would have done.
private func endWithTerminalReleased(_ signalNumber: Int32) {
    if terminalReserved.exchange(false, ordering: .acquiringAndReleasing) { releaseTerminal() }
    // The guard's handler removes the report files not yet complete, then ends leak-audit.
    ProcessGuard.endOn(signalNumber)
    raise(signalNumber)
}

/// leak-audit's live status line on a terminal, while the target runs: the time since it started,
/// the processes attached, the tracked instances alive and the type closest to its budget, and
/// the tests finished; then the slow steps after it ended (symbolizing) when they take more than
/// a second.
///
/// The target writes to the same terminal through the standard streams it inherited, and
/// leak-audit cannot see when. So the line never shares a row with the target: the terminal's
/// bottom row is taken out of its scroll region (DECSTBM, as apt's progress bar does), the target's
/// output scrolls above it, and each update is one write that saves the cursor, draws on the
/// bottom row and restores the cursor, which the terminal applies whole between the target's
/// writes. The row is given back and erased before the report is written, before leak-audit stops
/// for ^Z, and before a signal ends it; a resize is seen at the next update.
final class StatusLine: Sendable {
    private struct State {
        /// The terminal's size when the bottom row was last reserved.
        var rows = 0
        var columns = 0
        /// Updates drawn: the spinner's frame.
        var frame = 0
        /// The target has ended: the signals that end leak-audit give the terminal back.
        var targetEnded = false
        /// `finish` was called.
        var finished = false
    }

    private let state = Mutex(State())

    /// A step after the target ended is shown once it has taken this long.
    static let slowStep: Duration = .seconds(1)

    private init() {}

    /// The status line on standard error, or nil when it cannot be shown there: standard error is
    /// not a terminal (a CI log, a pipe, a file), the terminal is `dumb` or unknown (`TERM`),
    /// leak-audit runs in the background, or the terminal is too small.
    static func onStandardError(environment: [String: String]) -> StatusLine? {
        guard isatty(2) == 1, let term = environment["TERM"], !term.isEmpty, term != "dumb" else { return nil }
        guard tcgetpgrp(2) == getpgrp(), let size = terminalSize(), size.rows >= 5, size.columns >= 20 else { return nil }
        return StatusLine()
    }

    /// Shows `progress`: reserves the bottom row when the target is about to start, draws each
    /// snapshot there, and, once the target has ended, a slow step's progress.
    func show(_ progress: AuditProgress) {
        state.withLock { state in
            guard !state.finished else { return }
            if case .launching = progress.stage {
                reserve(&state)
                return
            }
            if case .symbolizing = progress.stage, !state.targetEnded {
                // The forwarding handlers were removed when the target ended.
                state.targetEnded = true
                for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { signal(signalNumber, endWithTerminalReleased) }
            }
            guard tcgetpgrp(2) == getpgrp() else { return }
            if releasedForStop.exchange(false, ordering: .acquiringAndReleasing) || !terminalReserved.load(ordering: .acquiring) {
                reserve(&state)
            }
            guard let size = Self.terminalSize(),
                let text = Self.text(progress, frame: state.frame, columns: size.columns - 1)
            else { return }
            state.frame += 1
            var sequence = "\u{1B}7"
            if size.rows != state.rows || size.columns != state.columns {
                // Resized: the region is set again for the new size (terminals reset it on a resize).
                sequence += "\u{1B}[1;\(size.rows - 1)r"
                (state.rows, state.columns) = (size.rows, size.columns)
            }
            // Default attributes, the row erased, no wrapping past its end; the cursor and the
            // target's attributes come back with the restore.
            sequence += "\u{1B}[\(size.rows);1H\u{1B}[0m\u{1B}[2K\u{1B}[?7l" + text + "\u{1B}[?7h\u{1B}8"
            Self.write(sequence)
        }
    }

    /// Gives the bottom row back, erased, before the report is written; the status line shows
    /// nothing more.
    func finish() {
        state.withLock { state in
            guard !state.finished else { return }
            state.finished = true
            if terminalReserved.exchange(false, ordering: .acquiringAndReleasing) { releaseTerminal() }
            signal(SIGTSTP, SIG_DFL)
            if state.targetEnded {
                for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { ProcessGuard.endOn(signalNumber) }
            }
        }
    }

    /// Takes the bottom row out of the scroll region: a newline first, so that a cursor on the
    /// bottom row scrolls up off it (apt's way), then the region, the cursor saved and restored
    /// around it (DECSTBM homes it), and back up the line the newline went down.
    private func reserve(_ state: inout State) {
        guard let size = Self.terminalSize() else { return }
        (state.rows, state.columns) = (size.rows, size.columns)
        terminalReserved.store(true, ordering: .releasing)
        signal(SIGTSTP, stopWithTerminalReleased)
        Self.write("\n\u{1B}7\u{1B}[1;\(size.rows - 1)r\u{1B}8\u{1B}[1A")
    }

    /// The line for `progress`, at most `columns` wide; nil when there is nothing to show (the
    /// target is starting, or a step after it ended has not yet taken a second).
    static func text(_ progress: AuditProgress, frame: Int, columns: Int) -> String? {
        let spinner = spinnerFrames[frame % spinnerFrames.count]
        var parts: [String]
        switch progress.stage {
        case .launching:
            return nil
        case .symbolizing(let stacks):
            guard progress.stageElapsed >= slowStep else { return nil }
            let count = stacks == 1 ? "1 stack" : "\(grouped(stacks)) stacks"
            parts = ["\(spinner) leak-audit: symbolizing \(count)…"]
        case .walkingHeap(let pid):
            parts = [
                "\(spinner) leak-audit \(duration(progress.elapsed))",
                "walking the heap of process \(pid) for --retainers…",
            ]
        case .recording:
            parts = ["\(spinner) leak-audit \(duration(progress.elapsed))"]
            let processes = progress.attachedProcesses
            parts.append(processes == 0 ? "no process attached yet" : processes == 1 ? "1 process" : "\(processes) processes")
            if progress.trackedInstancesAlive > 0 || progress.closestToBudget != nil {
                parts.append("\(grouped(progress.trackedInstancesAlive)) tracked alive")
            } else if progress.watchedInstancesAlive > 0 {
                parts.append("\(grouped(progress.watchedInstancesAlive)) objects alive")
            }
            if let closest = progress.closestToBudget {
                // Escaped: a name from the target must not reach the terminal raw.
                let name = ReportPhrases.elided(ReportPhrases.shortTypeName(closest.typeName), to: 40, keepingEnd: 16)
                parts.append("\(name) \(grouped(closest.live))/\(grouped(closest.max))")
            }
            if progress.typesOverBudget > 0 {
                parts.append(progress.typesOverBudget == 1 ? "1 over budget" : "\(progress.typesOverBudget) over budget")
            }
            if let tests = progress.testsFinished {
                parts.append(tests == 1 ? "1 test finished" : "\(grouped(tests)) tests finished")
            }
        }
        // The parts that fit, most important first; the first shortened if even it does not.
        var line = parts[0]
        for part in parts.dropFirst() {
            let candidate = line + " · " + part
            guard displayWidth(candidate) <= columns else { break }
            line = candidate
        }
        while displayWidth(line) > columns, !line.isEmpty { line.removeLast() }
        return line
    }

    private static let spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    /// `12.4 s`, then `3 min 05 s`, then `1 h 02 min`.
    static func duration(_ duration: Duration) -> String {
        let tenths = Int(duration.components.seconds) * 10 + Int(duration.components.attoseconds / 100_000_000_000_000_000)
        let seconds = tenths / 10
        if seconds < 60 { return "\(seconds).\(tenths % 10) s" }
        if seconds < 3_600 { return "\(seconds / 60) min " + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60) s" }
        let minutes = seconds / 60 % 60
        return "\(seconds / 3_600) h " + (minutes < 10 ? "0" : "") + "\(minutes) min"
    }

    /// `1,024`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return (number < 0 ? "-" : "") + result
    }

    /// The columns `text` takes on a terminal, near enough: wide East Asian characters and emoji
    /// take two, combining marks none. Wrapping is off while the line is drawn, so a misjudged
    /// character costs the line's end, never a row of the target's.
    static func displayWidth(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { width, scalar in
            switch scalar.value {
            case 0x0300...0x036F, 0x200B...0x200F, 0xFE00...0xFE0F: width
            case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
                0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
                width + 2
            default: width + 1
            }
        }
    }

    /// Standard error's terminal size.
    private static func terminalSize() -> (rows: Int, columns: Int)? {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return nil }
        return (Int(size.ws_row), Int(size.ws_col))
    }

    /// Writes `text` to standard error in one call when it can (the terminal applies one write
    /// whole, between the target's).
    private static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count, let start = bytes.baseAddress {
                let written = Glibc.write(2, start + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
