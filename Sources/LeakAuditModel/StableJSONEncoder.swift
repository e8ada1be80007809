import FoundationEssentials

/// Encodes a value into `stableJSON`'s form: the bytes Foundation's `JSONEncoder` writes with
/// `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]` and its default strategies, without
/// its costs. The field names are the `Codable` conformances' own (this is an `Encoder`, not a
/// second description of any model).
///
/// `JSONEncoder` keeps each object as a dictionary, hashing every key, and follows each value's
/// coding path; on a large report it was a sixth of leak-audit's instructions (docs/benchmarks.md,
/// "What leak-audit itself spends on a test run"). Here an object is its keys and values in the
/// order they were encoded, sorted once when written. The form it reproduces, from
/// swift-foundation's `JSONWriter`: two spaces of indent a level, `"key" : value`, keys sorted by
/// their UTF-8 bytes (a key encoded twice keeps its last value), an empty array or object as its
/// brackets around an empty line, `"`, `\`, and control characters escaped (`\b \f \n \r \t`,
/// the others as `\u00XX`), nothing else; a floating-point number as its `description` without a
/// trailing `.0`. A value of a type `JSONEncoder` writes its own way rather than by its
/// `Encodable` conformance (`Data`, `URL`, `Decimal`; a `Date` it writes by its conformance) or a
/// non-finite number is an error: none is in leak-audit's files.
struct StableJSONEncoding {
    /// Encodes `value`; throws for what `JSONEncoder` would write otherwise (above) or reject.
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = NodeEncoder(parent: Path(owner: nil, keys: []), key: nil)
        try encoder.encodeValue(value)
        var writer = Writer()
        writer.write(encoder.node ?? .object(Container()), indent: 0)
        return writer.bytes
    }

    /// One value of the tree an encoding builds before it is written.
    fileprivate enum Node {
        /// A number, `true`, `false` or `null`, as written.
        case literal(String)
        case string(String)
        case array(Container)
        case object(Container)
        /// Whatever a nested encoder ends up holding (an empty object when nothing).
        case nested(NodeEncoder)
    }

    /// An array's or an object's elements, filled by containers after it is placed in its parent.
    fileprivate final class Container {
        /// Its elements in the order they were encoded, with their keys (an array's are empty).
        var entries: [(key: String, node: Node)] = []

        func append(_ node: Node, forKey key: some CodingKey) {
            entries.append((key.stringValue, node))
        }
    }

    fileprivate struct Failure: Error {
        let reason: String
    }

    /// The encoder handed to each value's `encode(to:)`: it holds what that value encodes.
    fileprivate final class NodeEncoder: Encoder {
        /// Where the container that holds this value is, and its key there (nil at the top).
        let parent: Path
        let key: (any CodingKey)?
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        var node: Node?

        init(parent: Path, key: (any CodingKey)?) {
            self.parent = parent
            self.key = key
        }

        /// Worked out when asked (no value asks, in leak-audit's files), not at each value.
        var codingPath: [any CodingKey] { key.map { parent.codingPath + [$0] } ?? parent.codingPath }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(
                KeyedContainer<Key>(container: container(isObject: true), path: Path(owner: self, keys: [])))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(container: container(isObject: false), path: Path(owner: self, keys: []))
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }

        /// The container this value encodes into: the one asked for before, as `JSONEncoder`
        /// does when a value asks twice.
        private func container(isObject: Bool) -> Container {
            switch node {
            case .object(let container) where isObject: return container
            case .array(let container) where !isObject: return container
            default:
                let container = Container()
                node = isObject ? .object(container) : .array(container)
                return container
            }
        }

        /// Encodes `value` into this encoder.
        func encodeValue<Value: Encodable>(_ value: Value) throws {
            if let node = try Self.directNode(value) {
                self.node = node
            } else {
                try value.encode(to: self)
            }
        }

        /// The node of `value` made without an encoder of its own: a string or an integer, the
        /// elements of most arrays; nil for any other value.
        static func directNode<Value: Encodable>(_ value: Value) throws -> Node? {
            // Type comparisons, not casts: a cast is a call into the runtime for every value.
            if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
            if Value.self == Int.self { return .literal(String(unsafeBitCast(value, to: Int.self))) }
            if Value.self == Data.self || Value.self == URL.self || Value.self == Decimal.self {
                throw Failure(reason: "\(Value.self) is written its own way by JSONEncoder")
            }
            return nil
        }

        /// The node for a value encoded at `key` of the container at `parent`: built directly when
        /// it can be, otherwise by a nested encoder that `value` fills (an empty object when it
        /// encodes nothing, as `JSONEncoder` writes it).
        static func node<Value: Encodable>(of value: Value, parent: Path, key: any CodingKey) throws -> Node {
            if let node = try directNode(value) { return node }
            let nested = NodeEncoder(parent: parent, key: key)
            try value.encode(to: nested)
            return nested.node ?? .object(Container())
        }

        /// An encoder for a value that its caller encodes later (`superEncoder`): its node is read
        /// when the tree is written. Its path is whole, so that it keeps no encoder alive.
        static func deferred(parent: Path, key: any CodingKey) -> NodeEncoder {
            NodeEncoder(parent: Path(owner: nil, keys: parent.codingPath), key: key)
        }
    }

    /// Where a container is: within the value of `owner` (nil at the top), under `keys` (nested
    /// containers' keys). A coding path is made only when asked for.
    fileprivate struct Path {
        let owner: NodeEncoder?
        let keys: [any CodingKey]

        var codingPath: [any CodingKey] { (owner?.codingPath ?? []) + keys }

        func appending(_ key: any CodingKey) -> Path { Path(owner: owner, keys: keys + [key]) }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let container: Container
        let path: Path

        var codingPath: [any CodingKey] { path.codingPath }

        mutating func encodeNil(forKey key: Key) throws { container.append(.literal("null"), forKey: key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws {
            container.append(.literal(value ? "true" : "false"), forKey: key)
        }
        mutating func encode(_ value: String, forKey key: Key) throws { container.append(.string(value), forKey: key) }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            container.append(try Scalar.float(value), forKey: key)
        }
        mutating func encode(_ value: Float, forKey key: Key) throws {
            container.append(try Scalar.float(value), forKey: key)
        }
        mutating func encode(_ value: Int, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { container.append(.literal(String(value)), forKey: key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws {
            container.append(.literal(String(value)), forKey: key)
        }
        mutating func encode(_ value: UInt32, forKey key: Key) throws {
            container.append(.literal(String(value)), forKey: key)
        }
        mutating func encode(_ value: UInt64, forKey key: Key) throws {
            container.append(.literal(String(value)), forKey: key)
        }
        mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
            container.append(try NodeEncoder.node(of: value, parent: path, key: key), forKey: key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let nested = Container()
            container.append(.object(nested), forKey: key)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(container: nested, path: path.appending(key)))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = Container()
            container.append(.array(nested), forKey: key)
            return UnkeyedContainer(container: nested, path: path.appending(key))
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: SuperKey.super) }

        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

        private func superEncoder(named key: some CodingKey) -> any Encoder {
            let nested = NodeEncoder.deferred(parent: path, key: key)
            container.append(.nested(nested), forKey: key)
            return nested
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedEncodingContainer, NodeSink {
        let container: Container
        let path: Path

        var codingPath: [any CodingKey] { path.codingPath }

        var count: Int { container.entries.count }

        func put(_ node: Node) { container.entries.append(("", node)) }

        mutating func encode<Value: Encodable>(_ value: Value) throws {
            put(try NodeEncoder.node(of: value, parent: path, key: IndexKey(intValue: count)))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let nested = Container()
            let nestedPath = path.appending(IndexKey(intValue: count))
            put(.object(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(container: nested, path: nestedPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = Container()
            let nestedPath = path.appending(IndexKey(intValue: count))
            put(.array(nested))
            return UnkeyedContainer(container: nested, path: nestedPath)
        }

        mutating func superEncoder() -> any Encoder {
            let nested = NodeEncoder.deferred(parent: path, key: IndexKey(intValue: count))
            put(.nested(nested))
            return nested
        }
    }

    fileprivate struct SingleValueContainer: SingleValueEncodingContainer, NodeSink {
        let encoder: NodeEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        func put(_ node: Node) { encoder.node = node }

        mutating func encode<Value: Encodable>(_ value: Value) throws { try encoder.encodeValue(value) }
    }

    /// A container that takes one value at a time (an unkeyed container's next element, a single
    /// value): the scalars' methods of both.
    fileprivate protocol NodeSink {
        func put(_ node: Node)
    }

    fileprivate enum Scalar {
        /// A finite number as `JSONEncoder` writes it: its description without a trailing `.0`.
        static func float<Number: BinaryFloatingPoint & CustomStringConvertible>(_ value: Number) throws -> Node {
            guard value.isFinite else { throw Failure(reason: "\(value) is no JSON number") }
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            return .literal(text)
        }
    }

    private enum SuperKey: String, CodingKey {
        case `super`
    }

    /// An unkeyed container's element in a coding path.
    private struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }

        init(intValue: Int) {
            self.intValue = intValue
        }

        init?(stringValue: String) { nil }
    }

    /// The pretty-printed bytes of a tree.
    private struct Writer {
        var bytes: [UInt8] = []

        mutating func write(_ node: Node, indent: Int) {
            switch node {
            case .literal(let text): append(text)
            case .string(let text): writeString(text)
            case .array(let container): writeArray(container, indent: indent)
            case .object(let container): writeObject(container, indent: indent)
            case .nested(let encoder): write(encoder.node ?? .object(Container()), indent: indent)
            }
        }

        private mutating func append(_ text: String) {
            var text = text
            text.withUTF8 { bytes.append(contentsOf: $0) }
        }

        private mutating func writeIndent(_ level: Int) {
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }

        private mutating func writeArray(_ container: Container, indent: Int) {
            bytes.append(UInt8(ascii: "["))
            bytes.append(UInt8(ascii: "\n"))
            let entries = container.entries
            for index in entries.indices {
                if index > 0 { bytes.append(contentsOf: [UInt8(ascii: ","), UInt8(ascii: "\n")]) }
                writeIndent(indent + 1)
                write(entries[index].node, indent: indent + 1)
            }
            bytes.append(UInt8(ascii: "\n"))
            writeIndent(indent)
            bytes.append(UInt8(ascii: "]"))
        }

        private mutating func writeObject(_ container: Container, indent: Int) {
            bytes.append(UInt8(ascii: "{"))
            bytes.append(UInt8(ascii: "\n"))
            let entries = container.entries
            // By key, then by when it was encoded: of a key encoded twice, the last is written.
            let order = entries.indices.sorted { left, right in
                let (leftKey, rightKey) = (entries[left].key, entries[right].key)
                return leftKey == rightKey ? left < right : leftKey.utf8.lexicographicallyPrecedes(rightKey.utf8)
            }
            var first = true
            for (place, index) in order.enumerated() {
                if place + 1 < order.count && entries[order[place + 1]].key == entries[index].key { continue }
                if !first { bytes.append(contentsOf: [UInt8(ascii: ","), UInt8(ascii: "\n")]) }
                first = false
                writeIndent(indent + 1)
                writeString(entries[index].key)
                bytes.append(contentsOf: [UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: " ")])
                write(entries[index].node, indent: indent + 1)
            }
            bytes.append(UInt8(ascii: "\n"))
            writeIndent(indent)
            bytes.append(UInt8(ascii: "}"))
        }

        private static let hexDigits = Array("0123456789abcdef".utf8)

        private mutating func writeString(_ text: String) {
            bytes.append(UInt8(ascii: "\""))
            var text = text
            text.withUTF8 { utf8 in
                var mark = 0
                for (index, byte) in utf8.enumerated() {
                    let escape: UInt8
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"): escape = byte
                    case 0x08: escape = UInt8(ascii: "b")
                    case 0x0C: escape = UInt8(ascii: "f")
                    case 0x0A: escape = UInt8(ascii: "n")
                    case 0x0D: escape = UInt8(ascii: "r")
                    case 0x09: escape = UInt8(ascii: "t")
                    case 0x00..<0x20: escape = UInt8(ascii: "u")
                    default: continue
                    }
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<index]))
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(escape)
                    if escape == UInt8(ascii: "u") {
                        bytes.append(contentsOf: [
                            UInt8(ascii: "0"), UInt8(ascii: "0"), Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 0xF)],
                        ])
                    }
                    mark = index + 1
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...]))
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }
}

extension StableJSONEncoding.NodeSink {
    mutating func encodeNil() throws { put(.literal("null")) }
    mutating func encode(_ value: Bool) throws { put(.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { put(try StableJSONEncoding.Scalar.float(value)) }
    mutating func encode(_ value: Float) throws { put(try StableJSONEncoding.Scalar.float(value)) }
    mutating func encode(_ value: Int) throws { put(.literal(String(value))) }
    mutating func encode(_ value: Int8) throws { put(.literal(String(value))) }
    mutating func encode(_ value: Int16) throws { put(.literal(String(value))) }
    mutating func encode(_ value: Int32) throws { put(.literal(String(value))) }
    mutating func encode(_ value: Int64) throws { put(.literal(String(value))) }
    mutating func encode(_ value: UInt) throws { put(.literal(String(value))) }
    mutating func encode(_ value: UInt8) throws { put(.literal(String(value))) }
    mutating func encode(_ value: UInt16) throws { put(.literal(String(value))) }
    mutating func encode(_ value: UInt32) throws { put(.literal(String(value))) }
    mutating func encode(_ value: UInt64) throws { put(.literal(String(value))) }
}
