import Foundation
import XCTest

@testable import LeakAuditModel

/// The JSON report writes the model's kinds by name, and docs/report-schema.json lists the names it
/// allows: each enum of the model is one list, and the schema must list every case of it, so that
/// a new case (a root kind, a target kind) is not written into reports the schema refuses.
final class SchemaVocabularyTests: XCTestCase {
    private static let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/report-schema.json")

    /// Every `enum` list of strings in the schema, wherever it is.
    private func schemaEnums() throws -> [Set<String>] {
        let schema = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schema))
        var found: [Set<String>] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if let cases = object["enum"] as? [Any] { found.append(Set(cases.compactMap { $0 as? String })) }
                object.values.forEach(walk)
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(schema)
        return found
    }

    func testTheSchemaListsEveryCaseOfTheModelsKinds() throws {
        let enums = try schemaEnums()
        let kinds: [(String, Set<String>)] = [
            ("Retainer.RootKind", Set(Retainer.RootKind.allCases.map(\.rawValue))),
            ("TargetKind", Set(TargetKind.allCases.map(\.name))),
            ("AuditReport.NotAuditedReason", Set(AuditReport.NotAuditedReason.allCases.map(\.name))),
            ("UnreachableObjects.Group.Shape", Set(UnreachableObjects.Group.Shape.allCases.map(\.rawValue))),
            ("AuditVerdict", Set(AuditVerdict.allCases.map(\.name))),
        ]
        for (name, cases) in kinds {
            XCTAssertTrue(
                enums.contains(cases), "docs/report-schema.json has no enum of exactly \(name)'s cases: \(cases.sorted())")
        }
    }
}
