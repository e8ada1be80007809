import LeakAuditModel
import LeakAuditPresentation

/// What a saved report must not hold although JSON's grammar allows it, because readers disagree
/// on what it means: a key given twice in one object (leak-audit's decoder would take the first
/// value, jq and Python the last), a number that is not a whole count written in digits (`1e-400`,
/// `2.0`, a value beyond 64 bits) and a string with a lone UTF-16 surrogate escape (no character).
///
/// One pass over the bytes, with an explicit stack rather than recursion, so a file nested as deep
/// as it likes costs memory in proportion to its depth and no call stack. Text that is not JSON at
/// all is left to the decoder, which says so.
enum StrictJSON {
    /// Where a value is, as the reader's errors name it: a key of an object or an index in an array.
    private enum Step {
        case key(String)
        case index(Int)
    }

    /// An object being read: the keys seen so far.
    private struct OpenObject {
        var keys: Set<String> = []
    }

    /// The first thing in `bytes` that a strict reading refuses, as the reader's error says it
    /// (`the key "summary" appears twice in one object`), or nil when there is none or the text is
    /// not JSON.
    static func firstProblem(in bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { firstProblem(in: $0) }
    }

    private static func firstProblem(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var scan = Scan(bytes: bytes)
        // One value (or the opening of a container) a turn, then what follows it.
        while true {
            switch scan.readValue() {
            case .problem(let problem): return problem
            case .end: return nil
            case .opened: continue
            case .read: break
            }
            switch scan.readAfterValue() {
            case .problem(let problem): return problem
            case .end: return nil
            case .opened, .read: continue
            }
        }
    }

    /// What one step of the scan found.
    private enum Found {
        /// A value was read whole.
        case read
        /// A container was opened: its first value comes next.
        case opened
        /// Something the strict reading refuses.
        case problem(String)
        /// The end of the text, or text that is not JSON (left to the decoder).
        case end
    }

    /// The scan's place in the text: the position, where it is in the document, and the open
    /// containers.
    private struct Scan {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        var path: [Step] = []
        /// One entry per open container: an object's keys, or nil for an array.
        var open: [OpenObject?] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func skipSpace() {
            while position < bytes.count, isSpace(bytes[position]) { position += 1 }
        }

        /// Reads one value, or opens a container and leaves `position` at its first value.
        mutating func readValue() -> Found {
            skipSpace()
            guard position < bytes.count else { return .end }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .read
                }
                open.append(OpenObject())
                path.append(.key(""))
                return key(.opened)
            case UInt8(ascii: "["):
                position += 1
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .read
                }
                open.append(nil)
                path.append(.index(0))
                return .opened
            case UInt8(ascii: "\""):
                switch readString(bytes, &position) {
                case .string: return .read
                case .loneSurrogate(let escape):
                    return .problem("\(location(path)) holds a lone surrogate (\(escape)), which is no character")
                case .syntax: return .end
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return readNumber()
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                while position < bytes.count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[position]) {
                    position += 1
                }
                return .read
            default:
                return .end
            }
        }

        /// Reads a number, which must be a whole one written in digits that 64 bits hold.
        mutating func readNumber() -> Found {
            let start = position
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            var whole = true
            var digits = 0
            scan: while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-"):
                    whole = false
                default: break scan
                }
                position += 1
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            guard digits > 0 else { return .end }
            guard whole else {
                return .problem(
                    "\(location(path)) holds \(shown), which is not a whole number written in digits, as every count is")
            }
            guard Int64(text) != nil else { return .problem("\(location(path)) holds \(shown), too large for a count") }
            return .read
        }

        /// After a value: closes the containers that end there, and moves to the next value (its key
        /// read, in an object).
        mutating func readAfterValue() -> Found {
            while true {
                skipSpace()
                guard let container = open.last else { return .end }  // the top value is read
                guard position < bytes.count else { return .end }
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: container != nil ? "}" : "]") {
                    open.removeLast()
                    path.removeLast()
                    continue
                }
                guard byte == UInt8(ascii: ",") else { return .end }
                if container != nil { return key(.read) }
                guard case .index(let index) = path.last else { return .end }
                path[path.count - 1] = .index(index + 1)
                return .read
            }
        }

        /// Reads the next key of the innermost object; `found` when it is read.
        private mutating func key(_ found: Found) -> Found {
            switch readKey(bytes, &position, &open, &path) {
            case .problem(let problem): return .problem(problem)
            case .syntax: return .end
            case .read: return found
            }
        }
    }

    /// `"types[0].name"`: where a value is, quoted, as the reader's other errors say it.
    private static func location(_ path: [Step]) -> String {
        var text = ""
        for step in path {
            switch step {
            case .index(let index): text += "[\(index)]"
            case .key(let key): text += (text.isEmpty ? "" : ".") + key
            }
        }
        // A path as deep as the file likes is shown by its ends.
        if text.count > 200 { text = text.prefix(100) + "…" + text.suffix(100) }
        return "\"" + ReportPhrases.escaped(text) + "\""
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    private enum KeyReading {
        case read
        case problem(String)
        case syntax
    }

    /// Reads `"key":` of the innermost open object, records it, and leaves `position` at its value.
    private static func readKey(
        _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int, _ open: inout [OpenObject?], _ path: inout [Step]
    ) -> KeyReading {
        while position < bytes.count, isSpace(bytes[position]) { position += 1 }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return .syntax }
        let key: String
        switch readString(bytes, &position, keeping: true) {
        case .string(let text): key = text ?? ""
        case .loneSurrogate(let escape):
            path[path.count - 1] = .key("")
            return .problem("a key in \(location(path)) holds a lone surrogate (\(escape)), which is no character")
        case .syntax: return .syntax
        }
        path[path.count - 1] = .key(key)
        guard open[open.count - 1]?.keys.insert(key).inserted ?? false else {
            return .problem(
                "\(location(path)) is given twice in one object (a duplicate key, which JSON readers take differently)")
        }
        while position < bytes.count, isSpace(bytes[position]) { position += 1 }
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return .syntax }
        position += 1
        return .read
    }

    private enum StringReading {
        case string(String?)
        case loneSurrogate(String)
        case syntax
    }

    /// Reads the string that starts at `position` (its opening quote) and leaves `position` past
    /// its closing quote; `keeping` returns its text, escapes resolved (an object's key).
    private static func readString(
        _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int, keeping: Bool = false
    ) -> StringReading {
        position += 1
        var text: [UInt8] = []
        // A high surrogate escape waiting for its low half.
        var pendingHigh: UInt16? = nil
        var pendingEscape = ""
        func hex(at index: Int) -> UInt16? {
            guard index + 4 <= bytes.count else { return nil }
            return UInt16(String(decoding: bytes[index..<(index + 4)], as: UTF8.self), radix: 16)
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") {
                guard let unit = hex(at: position + 2) else { return .syntax }
                let escape = "\\u" + String(decoding: bytes[(position + 2)..<(position + 6)], as: UTF8.self)
                position += 6
                switch unit {
                case 0xD800...0xDBFF:
                    if pendingHigh != nil { return .loneSurrogate(pendingEscape) }
                    pendingHigh = unit
                    pendingEscape = escape
                case 0xDC00...0xDFFF:
                    guard let high = pendingHigh else { return .loneSurrogate(escape) }
                    pendingHigh = nil
                    let scalar = 0x10000 + ((UInt32(high) - 0xD800) << 10) + (UInt32(unit) - 0xDC00)
                    if keeping, let value = Unicode.Scalar(scalar) { text += Array(String(Character(value)).utf8) }
                default:
                    if pendingHigh != nil { return .loneSurrogate(pendingEscape) }
                    if keeping, let value = Unicode.Scalar(UInt32(unit)) { text += Array(String(Character(value)).utf8) }
                }
                continue
            }
            if pendingHigh != nil { return .loneSurrogate(pendingEscape) }
            if byte == UInt8(ascii: "\"") {
                position += 1
                return .string(keeping ? String(decoding: text, as: UTF8.self) : nil)
            }
            if byte == UInt8(ascii: "\\") {
                guard position + 1 < bytes.count else { return .syntax }
                if keeping {
                    switch bytes[position + 1] {
                    case UInt8(ascii: "n"): text.append(0x0A)
                    case UInt8(ascii: "t"): text.append(0x09)
                    case UInt8(ascii: "r"): text.append(0x0D)
                    case UInt8(ascii: "b"): text.append(0x08)
                    case UInt8(ascii: "f"): text.append(0x0C)
                    default: text.append(bytes[position + 1])
                    }
                }
                position += 2
                continue
            }
            if keeping { text.append(byte) }
            position += 1
        }
        return .syntax
    }
}
