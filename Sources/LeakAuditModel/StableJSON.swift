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

extension ExplicitNull: Equatable where Value: Equatable {}

extension ExplicitNull: Decodable where Value: Decodable {
    /// Reads `null` as nil; a missing key is an error (the key is required), as Codable's default is.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

/// A field added to a schema after its first release: written like `ExplicitNull` (`null` when
/// absent, never left out), and read as absent when a file written before the field existed
/// leaves it out, so that adding it keeps the schema's version.
@propertyWrapper
package struct AddedField<Value: Codable>: Codable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension AddedField: Equatable where Value: Equatable {}

extension KeyedDecodingContainer {
    /// An added field's key may be missing: a file written before the field existed.
    package func decode<Value>(_ type: AddedField<Value>.Type, forKey key: Key) throws -> AddedField<Value> {
        try decodeIfPresent(type, forKey: key) ?? AddedField(wrappedValue: nil)
    }
}
