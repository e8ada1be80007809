// The readings of SwiftName and ReadableStack over the UTF-8 bytes of a name that is all printable
// ASCII (0x20 to 0x7E), as nearly every demangled name is. In such a name each byte is a whole
// Character (no combining mark, no "\r\n"), so walking its bytes finds what walking its Characters
// finds, at a small part of the cost: the Character walks were about a third of an HTML report's
// instructions (a million a function name, 365 names in Swinject's report). Any other name takes
// the Character walks, which stay the definition (PrintableASCIINameTests compares both).

/// Readings of a printable ASCII name's bytes; each returns what the Character reading of the same
/// name returns.
package enum PrintableASCIIName {
    /// The bytes of `text` when every one is printable ASCII; nil otherwise.
    package static func bytes(of text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                guard bytes[index] >= 0x20 && bytes[index] < 0x7F else { return nil }
                index += 1
            }
            return Array(bytes)
        }
    }

    /// The string of `bytes`, all ASCII.
    package static func string(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// The first index at or after `start` (and before `end`) where `needle` occurs in `bytes`.
    package static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int = 0, before end: Int? = nil)
        -> Int?
    {
        let end = end ?? bytes.count
        guard let first = needle.first else { return start }
        var index = start
        while index + needle.count <= end {
            if bytes[index] == first {
                var matched = 1
                while matched < needle.count && bytes[index + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return index }
            }
            index += 1
        }
        return nil
    }

    /// The first index at or after `start` (and before `end`) of `byte`.
    private static func firstIndex(of byte: UInt8, in bytes: [UInt8], from start: Int, before end: Int? = nil) -> Int? {
        var index = start
        let end = end ?? bytes.count
        while index < end {
            if bytes[index] == byte { return index }
            index += 1
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// Character.isLetter or isNumber, for printable ASCII.
    private static func isLetterOrNumber(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    private static let space = UInt8(ascii: " ")

    /// SwiftName.withoutPrivateDiscriminators.
    package static func withoutPrivateDiscriminators(_ name: [UInt8]) -> [UInt8] {
        let marker = Array(" in _".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(name.count)
        var rest = 0
        while let open = firstIndex(of: UInt8(ascii: "("), in: name, from: rest) {
            let inside = open + 1
            guard let close = firstIndex(of: UInt8(ascii: ")"), in: name, from: inside),
                let found = firstIndex(of: marker, in: name, from: inside, before: close),
                name[(found + marker.count)..<close].allSatisfy(isHexDigit)
            else {
                result += name[rest...open]
                rest = inside
                continue
            }
            result += name[rest..<open]
            result += name[inside..<found]
            rest = close + 1
        }
        result += name[rest...]
        return result
    }

    /// SwiftName.withoutReturnType.
    package static func withoutReturnType(_ function: [UInt8]) -> [UInt8] {
        let arrow = Array(" -> ".utf8)
        var depth = 0
        var lastTopLevelArrow: Int?
        var index = 0
        while index < function.count {
            let byte = function[index]
            if byte == space && index + arrow.count <= function.count
                && function[index..<(index + arrow.count)].elementsEqual(arrow)
            {
                if depth == 0 { lastTopLevelArrow = index }
                index += arrow.count
                continue
            }
            switch byte {
            case UInt8(ascii: "("), UInt8(ascii: "<"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: ">"), UInt8(ascii: "]"): depth = max(0, depth - 1)
            default: break
            }
            index += 1
        }
        guard let lastTopLevelArrow else { return function }
        if firstIndex(of: Array(" in ".utf8), in: function, from: lastTopLevelArrow) != nil { return function }
        return Array(function[..<lastTopLevelArrow])
    }

    /// `(unknown context at $55d7f1c0b9dc)` as `(local)` (ReadableStack's).
    package static func replacingUnknownContexts(_ text: [UInt8]) -> [UInt8] {
        let marker = Array("(unknown context at $".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(text.count)
        var rest = 0
        while let found = firstIndex(of: marker, in: text, from: rest) {
            result += text[rest..<found]
            result += "(local)".utf8
            guard let close = firstIndex(of: UInt8(ascii: ")"), in: text, from: found + marker.count) else { return result }
            rest = close + 1
        }
        result += text[rest...]
        return result
    }

    /// The name so far that a closure's signature follows: what the regex `(.*closure #\d+)( @\w+)* `
    /// captures when it matches the whole of `text` (ReadableStack's `closureName`), nil when it
    /// does not. Its attributes (` @\w+`) hold no `#`, so the capture ends with the digits after
    /// the last `#`; `.` matches every printable ASCII byte.
    package static func closureName(_ text: [UInt8]) -> [UInt8]? {
        guard text.last == space else { return nil }
        let body = text.count - 1
        guard let hash = text[..<body].lastIndex(of: UInt8(ascii: "#")) else { return nil }
        let closure = Array("closure ".utf8)
        guard hash >= closure.count, text[(hash - closure.count)..<hash].elementsEqual(closure) else { return nil }
        var end = hash + 1
        while end < body && (0x30...0x39).contains(text[end]) { end += 1 }
        guard end > hash + 1 else { return nil }
        // What follows is ( @\w+)*: a space, an at sign and word characters, again and again.
        var index = end
        while index < body {
            guard text[index] == space, index + 1 < body, text[index + 1] == UInt8(ascii: "@") else { return nil }
            index += 2
            let wordStart = index
            while index < body && (isLetterOrNumber(text[index]) || text[index] == UInt8(ascii: "_")) { index += 1 }
            guard index > wordStart else { return nil }
        }
        return Array(text[..<end])
    }

    /// ReadableStack.compactSignatures.
    package static func compactSignatures(_ characters: [UInt8]) -> [UInt8] {
        let inMarker = Array(" in ".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(characters.count)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            guard character == UInt8(ascii: "(") else {
                result.append(character)
                index += 1
                continue
            }
            var depth = 0
            var end = index
            var parameters: [[UInt8]] = []
            var current: [UInt8] = []
            while end < characters.count {
                let inner = characters[end]
                if inner == UInt8(ascii: "-") && end + 1 < characters.count && characters[end + 1] == UInt8(ascii: ">") {
                    current += "->".utf8
                    end += 2
                    continue
                }
                switch inner {
                case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "<"): depth += 1
                case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: ">"): depth -= 1
                default: break
                }
                if depth == 0 { break }
                if depth == 1 && inner == UInt8(ascii: ",") {
                    parameters.append(current)
                    current = []
                } else if end > index {
                    current.append(inner)
                }
                end += 1
            }
            guard end < characters.count else {
                result += characters[index...]
                break
            }
            parameters.append(current)
            let previous = result.last
            if result.last == space, let closure = closureName(result),
                let found = firstIndex(of: inMarker, in: characters, from: end + 1)
            {
                result = closure
                index = found
                continue
            }
            if let previous, isLetterOrNumber(previous) || previous == UInt8(ascii: "_") || previous == UInt8(ascii: ">") {
                result.append(UInt8(ascii: "("))
                for parameter in parameters {
                    let trimmed = parameter.drop { $0 == space }
                    guard !trimmed.isEmpty else { continue }
                    if let colon = trimmed.firstIndex(of: UInt8(ascii: ":")),
                        !trimmed[..<colon].contains(where: { Array(" .(<[".utf8).contains($0) })
                    {
                        result += trimmed[..<colon]
                        result.append(UInt8(ascii: ":"))
                    } else {
                        result += "_:".utf8
                    }
                }
                result.append(UInt8(ascii: ")"))
            } else {
                result += characters[index...end]
            }
            index = end + 1
        }
        for suffix in [" throws", " async", " async throws"] {
            let suffix = Array(suffix.utf8)
            if result.count >= suffix.count && result[(result.count - suffix.count)...].elementsEqual(suffix) {
                result.removeLast(suffix.count)
            }
        }
        // An accessor's type (`x.getter : Swift.Int`).
        let colonMarker = Array(" : ".utf8)
        while let colon = firstIndex(of: colonMarker, in: result) {
            let end = firstIndex(of: inMarker, in: result, from: colon + colonMarker.count) ?? result.count
            result.removeSubrange(colon..<end)
        }
        return result
    }
}
