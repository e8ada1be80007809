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
