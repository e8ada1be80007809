import Foundation
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// `stableJSON` writes the bytes Foundation's `JSONEncoder` writes with its options: on every
/// sample report (JSON of both schemas, the SARIF log, the JSON comparison) and on values made to
/// reach every case of its writer (escapes, key order, empty containers, numbers, nested and
/// super encoders).
final class StableJSONTests: XCTestCase {
    /// What `stableJSON` wrote when it used `JSONEncoder`.
    static func foundationJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
    }

    func testEverySampleReportIsJSONEncodersBytes() throws {
        for (name, report) in GoldenOutputTests.samples {
            for version in [1, 2] {
                let wire = JSONReportWire(report, schemaVersion: version)
                XCTAssertEqual(
                    stableJSON(wire, what: name), try Self.foundationJSON(wire), "\(name), schema \(version)")
            }
            let diff = ReportDiff(old: report, oldPath: "old.json", new: GoldenOutputTests.samples[0].1, newPath: "new.json")
            XCTAssertEqual(
                JSONDiffRenderer().render(diff), try Self.foundationJSON(JSONDiffV1(diff)), "\(name), comparison")
        }
    }

    func testTheSARIFLogOfEverySampleIsJSONEncodersBytes() throws {
        for (name, report) in GoldenOutputTests.samples {
            let log = SARIFReportRenderer(workingDirectory: GoldenOutputTests.cwd).log(report)
            XCTAssertEqual(stableJSON(log, what: name), try Self.foundationJSON(log), name)
        }
    }

    private struct Everything: Encodable {
        struct Inner: Encodable, Equatable {
            var b: Int
            var a: String?
        }
        /// Encoded by its synthesized conformance: one key a field, of every type the containers take.
        struct Plain: Encodable {
            var text = "quote \" backslash \\ slash / tab\t nl\n cr\r bs\u{8} ff\u{C} nul\u{0} us\u{1F} esc\u{1B} del\u{7F} é 🦊"
            var emptyArray: [Int] = []
            var emptyObject: [String: Int] = [:]
            var nestedEmpty: [[String]] = [[], []]
            var doubles: [Double] = [0, 1, -2.5, 1e300, 0.1, 123_456_789_012, 5e-324]
            var float: Float = 3.25
            var floats: [Float] = [0.5, 2]
            var integers: [Int64] = [.min, .max, 0]
            var unsigned: UInt64 = .max
            var int8: Int8 = -8
            var uint8: UInt8 = 8
            var int16: Int16 = -16
            var uint16: UInt16 = 16
            var int32: Int32 = -32
            var uint32: UInt32 = 32
            var uint: UInt = 7
            var flags = [true, false]
            var keys: [String: Int] = ["b": 1, "B": 2, "a": 3, "é": 4, "Z": 5, "a b": 6, "10": 7, "9": 8, "": 9, "\u{1}": 10]
            var byNumber: [Int: String] = [2: "two", 10: "ten", 1: "one"]
            var inner = Inner(b: 1, a: nil)
            var inners = [Inner(b: 2, a: "x"), Inner(b: 3, a: nil)]
            var optionals: [Int?] = [1, nil]
            @ExplicitNull var null: Int? = nil
            var absent: Int? = nil
            var date = Date(timeIntervalSinceReferenceDate: 12.5)

            enum CodingKeys: String, CodingKey {
                case text, emptyArray, emptyObject, nestedEmpty, doubles, float, floats, integers, unsigned, int8, uint8
                case int16, uint16, int32, uint32, uint, flags, keys, byNumber, inner, inners, optionals, null, absent, date
            }
        }

        enum Keys: String, CodingKey {
            case twice, nested, list, parent, empty, single, small
        }

        func encode(to encoder: any Encoder) throws {
            // Two keyed containers of one value write into one object.
            try Plain().encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            var small = container.nestedUnkeyedContainer(forKey: .small)
            // Each through the container's own method for its type, then through `encode<T>`.
            try small.encode(contentsOf: [Int8(-1)])
            try small.encode(contentsOf: [UInt8(1), 2])
            try small.encode(contentsOf: [Int16(-2)])
            try small.encode(contentsOf: [UInt16(2)])
            try small.encode(contentsOf: [Int32(-3)])
            try small.encodeNil()
            try small.encode(contentsOf: [UInt32(3)])
            try small.encode(contentsOf: [Int64(-4)])
            try small.encode(contentsOf: [UInt(4)])
            try small.encode(contentsOf: [UInt64(5)])
            try small.encode(contentsOf: [Int(6)])
            try small.encodeNil()
            try small.encode(contentsOf: [1.5, 2])
            try small.encode(contentsOf: [Float(0.25)])
            try small.encode(contentsOf: [true])
            try small.encode(contentsOf: ["text"])
            let values: [any Encodable] = [
                Int8(-1), UInt8(1), Int16(-2), UInt16(2), Int32(-3), UInt32(3), Int64(-4), UInt(4), 1.5, "s",
            ]
            for value in values { try small.encode(value) }
            // A key encoded twice keeps its last value.
            try container.encode(1, forKey: .twice)
            try container.encode("second", forKey: .twice)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .nested)
            try nested.encode(Inner(b: 1, a: nil), forKey: .parent)
            try nested.encodeNil(forKey: .empty)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            var listed = list.nestedContainer(keyedBy: Keys.self)
            try listed.encode(2.0, forKey: .single)
            var deeper = list.nestedUnkeyedContainer()
            try deeper.encode("deep")
            try list.encode(Inner(b: 6, a: "listed"))
            try Inner(b: 4, a: "super").encode(to: container.superEncoder(forKey: .parent))
            try Inner(b: 5, a: nil).encode(to: container.superEncoder())
            _ = container.superEncoder(forKey: .empty)
            var single = container.superEncoder(forKey: .single).singleValueContainer()
            try single.encode("one value")
        }
    }

    func testEveryKindOfValueIsJSONEncodersBytes() throws {
        let value = Everything()
        XCTAssertEqual(stableJSON(value, what: "values"), try Self.foundationJSON(value))
        // Top-level values other than an object.
        XCTAssertEqual(
            stableJSON([Everything.Inner(b: 1, a: "a")], what: "array"), try Self.foundationJSON([Everything.Inner(b: 1, a: "a")])
        )
        XCTAssertEqual(stableJSON("text/\u{2028}", what: "string"), try Self.foundationJSON("text/\u{2028}"))
        XCTAssertEqual(stableJSON(42, what: "number"), try Self.foundationJSON(42))
        XCTAssertEqual(stableJSON([String: [Int]](), what: "empty"), try Self.foundationJSON([String: [Int]]()))
    }

    func testValuesJSONEncoderWritesItsOwnWayAreErrors() {
        XCTAssertThrowsError(try StableJSONEncoding.encode(["data": Data([1, 2])]))
        XCTAssertThrowsError(try StableJSONEncoding.encode([URL(fileURLWithPath: "/tmp")]))
        XCTAssertThrowsError(try StableJSONEncoding.encode([Double.nan]))
        XCTAssertThrowsError(try StableJSONEncoding.encode(["infinite": Float.infinity]))
    }
}
