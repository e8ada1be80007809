import FoundationEssentials

/// Pretty-printed JSON with sorted keys and a final newline: the form of every JSON file leak-audit
/// writes (report, SARIF log, baseline), so that the same content is always the same bytes.
///
/// Encoding the plain value types these files are made of cannot fail; a failure would be a bug
/// worth a trap, named by `what`.
package func stableJSON(_ value: some Encodable, what: String) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(value) else { preconditionFailure("\(what) could not be encoded") }
    return String(decoding: data, as: UTF8.self) + "\n"
}

/// An optional that a JSON file writes as `null` when absent instead of leaving its key out (what
/// Codable does by default), so that every object of a documented schema has all of its keys.
@propertyWrapper
package struct ExplicitNull<Value: Encodable>: Encodable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
