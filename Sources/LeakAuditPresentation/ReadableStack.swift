import LeakAuditModel
import Synchronization

/// The part of an allocation stack a person needs, innermost first: from the line that
/// constructed the instances outward, with recursion collapsed and the frames that have no source
/// line of the user's (the runtime, Foundation, the test harness, compiler thunks and
/// macro-generated code) folded into one entry per run. Reports keep every frame; this is only
/// what the text report shows.
package enum ReadableStack {
    /// One line of a readable stack.
    enum Entry: Equatable {
        /// A frame with a source line, `times` times in a row (a directly recursive function).
        case frame(SymbolizedFrame, times: Int)
        /// The `length` frames before this entry ran `times` times over (mutual recursion).
        case cycle(length: Int, times: Int)
        /// `count` frames without a source line of the user's, in these modules.
        case folded(count: Int, modules: [String])
        /// `count` more frames left out after the limit.
        case more(count: Int)
    }

    /// Frames that reach at most `limit` source frames (nil: every frame, nothing folded or
    /// collapsed), starting at the constructing frame of `typeName`'s instances and stopping at
    /// the program's entry point.
    static func entries(_ frames: [SymbolizedFrame], typeName: String, limit: Int?) -> [Entry] {
        guard let limit else { return frames.map { .frame($0, times: 1) } }
        let start = AuditReport.AllocationGroup.constructingIndex(in: frames, typeName: typeName) ?? 0
        var rest = Array(frames[start...])
        if let entry = rest.firstIndex(where: isEntryPoint) { rest = Array(rest[...entry]) }
        // Frames without a line in the modules whose code is shown are compiler thunks
        // (reabstraction, protocol witnesses, macro expansions): left out, not folded.
        let ownModules = Set(rest.filter(isShown).compactMap(\.module))
        rest.removeAll { !isShown($0) && $0.module.map(ownModules.contains) == true }
        var entries: [Entry] = []
        var shownSources = 0
        var index = 0
        while index < rest.count {
            if shownSources == limit {
                entries.append(.more(count: rest.count - index))
                break
            }
            let frame = rest[index]
            guard isShown(frame) else {
                var modules: [String] = []
                var seen: Set<String> = []
                var end = index
                while end < rest.count && !isShown(rest[end]) {
                    let module = moduleName(rest[end])
                    if seen.insert(module).inserted { modules.append(module) }
                    end += 1
                }
                entries.append(.folded(count: end - index, modules: modules))
                index = end
                continue
            }
            // The shortest run of frames that repeats right after itself, and how many times.
            var collapsed = false
            for length in 1...4 where index + 2 * length <= rest.count {
                var times = 1
                while index + (times + 1) * length <= rest.count
                    && (0..<length).allSatisfy({ sameSite(rest[index + $0], rest[index + times * length + $0]) })
                {
                    times += 1
                }
                guard times > 1 else { continue }
                if length == 1 {
                    entries.append(.frame(frame, times: times))
                } else {
                    entries += rest[index..<(index + length)].map { .frame($0, times: 1) }
                    entries.append(.cycle(length: length, times: times))
                }
                shownSources += 1
                index += times * length
                collapsed = true
                break
            }
            if !collapsed {
                entries.append(.frame(frame, times: 1))
                shownSources += 1
                index += 1
            }
        }
        return entries
    }

    /// True for a frame shown as itself: one with a source line that is not generated code.
    static func isShown(_ frame: SymbolizedFrame) -> Bool {
        frame.hasSourceLine
    }

    /// `main`, or a script's `Module_main`: nothing below it is the user's.
    static func isEntryPoint(_ frame: SymbolizedFrame) -> Bool {
        let function = frame.function ?? ""
        return function == "main" || (function.hasSuffix("_main") && !function.includes(" "))
    }

    /// The library a frame belongs to: `libswift_Concurrency` for
    /// `/usr/lib/swift/linux/libswift_Concurrency.so`.
    static func moduleName(_ frame: SymbolizedFrame) -> String {
        guard let module = frame.module else { return "unknown code" }
        var name = module.split(separator: "/").last.map(String.init) ?? module
        if let range = name.firstRange(of: ".so") { name = String(name[..<range.lowerBound]) }
        return name
    }

    private static func sameSite(_ left: SymbolizedFrame, _ right: SymbolizedFrame) -> Bool {
        left.function == right.function && left.file == right.file && left.line == right.line
    }

    /// A demangled function name made readable: no return type, async continuations read as the
    /// function they belong to, and private discriminators (`(name in _D650…)`) as the name.
    package static func readableFunction(_ function: String) -> String {
        readableFunctions.value(for: function, makeReadable)
    }

    /// What `readableFunction` made of each function so far.
    private static let readableFunctions = TextMemo()

    /// `readableFunction`'s making: over the bytes of a printable ASCII name (nearly every name),
    /// a Character at a time for any other (PrintableASCIIName says why).
    package static func makeReadable(_ function: String) -> String {
        guard var bytes = PrintableASCIIName.bytes(of: function) else { return makeReadableByCharacter(function) }
        for marker in partialFunctionMarkers {
            if let found = PrintableASCIIName.firstIndex(of: Array(marker.utf8), in: bytes) {
                bytes.removeFirst(found + marker.utf8.count)
            }
        }
        let result = PrintableASCIIName.withoutPrivateDiscriminators(bytes)
        // The same steps, in the same order, as makeReadableByCharacter's.
        return PrintableASCIIName.string(
            PrintableASCIIName.compactSignatures(
                PrintableASCIIName.replacingUnknownContexts(PrintableASCIIName.withoutReturnType(result))))
    }

    /// What marks an async function's continuation, before the function's name.
    private static let partialFunctionMarkers = ["suspend resume partial function for ", "await resume partial function for "]

    /// `readableFunction`'s making, a Character at a time: for any name.
    package static func makeReadableByCharacter(_ function: String) -> String {
        var text = function
        for marker in partialFunctionMarkers {
            if let range = text.firstRange(of: marker) { text = String(text[range.upperBound...]) }
        }
        let result = SwiftName.withoutPrivateDiscriminatorsByCharacter(text)
        // After the discriminators: a return type naming a private type (`-> App.(Box in _0A…)`)
        // reads as a closure's ` in `, and would be kept.
        return compactSignatures(SwiftName.withoutReturnTypeByCharacter(result).replacingUnknownContexts())
    }

    /// `closure #1` for `closure #1 ` and `closure #1 @Sendable `: a name so far that a closure's
    /// signature follows; nil for any other.
    private static func closureName(_ text: String) -> String? {
        closureSignature.withLock { text.wholeMatch(of: $0).map { String($0.output.1) } }
    }

    /// The regex of `closureName`, built once (building one costs more than matching it); a regex
    /// is not safe to share between threads, so it is used under a lock.
    private static let closureSignature = Mutex(#/(.*closure #\d+)( @\w+)* /#)

    /// Parameter lists as Swift names functions, labels only (`open(Swift.String)` →
    /// `open(_:)`, `init(title: Swift.String)` → `init(title:)`), closures without their
    /// signatures (`closure #1 (Swift.Int) -> () in f()` → `closure #1 in f()`), and no trailing
    /// `throws` or `async`.
    static func compactSignatures(_ function: String) -> String {
        let characters = Array(function)
        var result = ""
        var index = 0
        while index < characters.count {
            let character = characters[index]
            guard character == "(" else {
                result.append(character)
                index += 1
                continue
            }
            // The matching parenthesis, and the top-level parameters in between.
            var depth = 0
            var end = index
            var parameters: [String] = []
            var current = ""
            while end < characters.count {
                let inner = characters[end]
                // `->` is an arrow, not a closing angle bracket.
                if inner == "-" && end + 1 < characters.count && characters[end + 1] == ">" {
                    current += "->"
                    end += 2
                    continue
                }
                // Compared one by one: a string's `contains` walks its characters at every step.
                if inner == "(" || inner == "[" || inner == "<" { depth += 1 }
                if inner == ")" || inner == "]" || inner == ">" { depth -= 1 }
                if depth == 0 { break }
                if depth == 1 && inner == "," {
                    parameters.append(current)
                    current = ""
                } else if end > index {
                    current.append(inner)
                }
                end += 1
            }
            guard end < characters.count else {
                result += String(characters[index...])
                break
            }
            parameters.append(current)
            let previous = result.last
            // `closure #1 (A) -> B in f()`, `closure #1 @Sendable (A) -> B in f()`: the signature, with
            // its attributes, up to ` in ` is skipped.
            // The match needs a space last: most names have none before a parenthesis, and skip
            // the regex, which costs more than the rest of the name's pass.
            if result.last == " ", let closure = closureName(result) {
                var skip = end + 1
                let rest = String(characters[skip...])
                if let inRange = rest.firstRange(of: " in ") {
                    skip += rest.distance(from: rest.startIndex, to: inRange.lowerBound)
                    result = closure
                    index = skip
                    continue
                }
            }
            if let previous, previous.isLetter || previous.isNumber || previous == "_" || previous == ">" {
                let labels = parameters.map { parameter -> String in
                    let trimmed = parameter.drop { $0 == " " }
                    guard !trimmed.isEmpty else { return "" }
                    if let colon = trimmed.firstIndex(of: ":"), !trimmed[..<colon].contains(where: { " .(<[".contains($0) }) {
                        return String(trimmed[..<colon]) + ":"
                    }
                    return "_:"
                }
                result += "(" + labels.joined() + ")"
            } else {
                result += String(characters[index...end])
            }
            index = end + 1
        }
        for suffix in [" throws", " async", " async throws"] where result.hasSuffix(suffix) {
            result.removeLast(suffix.count)
        }
        // An accessor's type (`x.getter : Swift.Int`, `x.unsafeMutableAddressor : App.Box`).
        while let colon = result.firstRange(of: " : ") {
            let after = result[colon.upperBound...]
            let end = after.firstRange(of: " in ")?.lowerBound ?? result.endIndex
            result.removeSubrange(colon.lowerBound..<end)
        }
        return result
    }
}

extension String {
    /// `(unknown context at $55d7f1c0b9dc)` as `(local)`: an address that changes with every run.
    fileprivate func replacingUnknownContexts() -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: "(unknown context at $") {
            result += rest[..<range.lowerBound] + "(local)"
            guard let close = rest[range.upperBound...].firstIndex(of: ")") else { return result }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}
