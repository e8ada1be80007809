import LeakAuditModel
import LeakAuditWire

extension BudgetPattern {
    /// Parses `PATTERN=N`, splitting at the last `=` (type names never contain one).
    public init(parsing text: String, origin: String) throws(ConfigurationError) {
        guard let equals = text.lastIndex(of: "="), let max = Int(text[text.index(after: equals)...]), max >= 0 else {
            throw .invalidBudget(text: text, origin: origin)
        }
        let pattern = String(text[..<equals].drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !pattern.isEmpty, !pattern.contains("\n") else { throw .invalidBudget(text: text, origin: origin) }
        self.init(pattern: pattern, max: max, origin: origin)
    }
}

/// Whether `text` matches `pattern` (`*` any run of characters, `?` one, everything else itself):
/// the shim's matcher, shared through the wire header, so that budgets and suppressions read a
/// pattern the same way. A pattern holding a NUL matches only up to it; configuration refuses one.
func globMatches(_ pattern: String, _ text: String) -> Bool {
    var text = text
    return pattern.withCString { pattern in
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { characters in
                la_wire_glob_matches(pattern, characters.baseAddress ?? pattern, characters.count)
            }
        }
    }
}
