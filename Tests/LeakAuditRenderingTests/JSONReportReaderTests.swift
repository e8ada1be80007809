import Foundation
import LeakAuditFiles
import XCTest

@testable import LeakAuditModel
@testable import LeakAuditRendering

/// Reading a JSON report back (`leak-audit report`): every format rendered from the report read
/// back is the bytes rendering the original gives, and every bad file is one clear error.
final class JSONReportReaderTests: XCTestCase {
    // MARK: - Round trip

    /// Every renderer this test compares: each format as `leak-audit report` writes it (every case
    /// of `ReportFormat`, so that a new format is compared without a change here), and the golden
    /// tests' renderers (every format in every layout it reads: the text report fitted to 80
    /// columns, unfolded and coloured).
    private static var renderers: [(name: String, renderer: any ReportRenderer)] {
        ReportFormat.allCases.map { ($0.rawValue, $0.renderer) } + GoldenOutputTests.renderers
    }

    private func readBack(_ report: AuditReport, name: String) throws -> AuditReport {
        let json = JSONReportRenderer().render(report)
        return try JSONReportReader().decode(Array(json.utf8), path: "\(name).json")
    }

    func testEveryFormatOfEverySampleIsTheSameRenderedFromItsJSON() throws {
        for (name, report) in GoldenOutputTests.samples {
            let read = try readBack(report, name: name)
            for (format, renderer) in Self.renderers {
                XCTAssertEqual(
                    renderer.render(read), renderer.render(report), "\(name) in \(format) differs when rendered from its JSON")
            }
        }
    }

    func testABudgetAsLargeAsAnIntHoldsReadsBack() throws {
        // Found by the fuzzer: a budget is no count, and "no limit" is written as Int.max.
        guard var report = GoldenOutputTests.samples.first?.1 else { return XCTFail("no sample") }
        report.types[report.types.count - 1].max = Int.max
        report.types[0].budget = .pattern(BudgetPattern(pattern: "App.*", max: Int.max, origin: "--budget"))
        let read = try readBack(report, name: "largest-budget")
        XCTAssertEqual(read.types.last?.max, Int.max)
        XCTAssertEqual(JSONReportRenderer().render(read), JSONReportRenderer().render(report))
    }

    /// The round trip compares renderings, so it notices a lost field only when some sample
    /// renders differently without it: each field that is easy to lose (one the JSON carries only
    /// since schema 1 grew, or that is read back from a name) changes some rendering of some
    /// sample. A field added to the model and the JSON should get its line here.
    func testTheRoundTripWouldNoticeEachFieldLost() {
        let losses: [(field: String, lose: (inout AuditReport) -> Void)] = [
            ("target.kind", { $0.target.kind = nil }),
            ("watchedInstances", { $0.watchedInstances = 0 }),
            ("exceededCapacity", { $0.exceededCapacity = false }),
            ("damagedRecords", { $0.damagedRecords = 0 }),
            ("tornRecords", { $0.tornRecords = 0 }),
            (
                "types[].retainers[].omittedSteps",
                { report in
                    for index in report.types.indices {
                        for retainer in report.types[index].retainers?.indices ?? [].indices {
                            report.types[index].retainers?[retainer].omittedSteps = 0
                        }
                    }
                }
            ),
            ("target.skippedProcesses", { $0.target.skippedProcesses = 0 }),
            (
                "target.processes[].testsRun",
                { report in
                    for index in report.target.processes.indices { report.target.processes[index].testsRun = nil }
                }
            ),
            (
                "types[].budget",
                { report in
                    for index in report.types.indices { report.types[index].budget = .code }
                }
            ),
            (
                "types[].status",
                { report in
                    for index in report.types.indices { report.types[index].status = .failing }
                }
            ),
            (
                "types[].retainers[].path[].isCollectionStorage",
                { report in
                    for index in report.types.indices {
                        report.types[index].retainers = report.types[index].retainers?.map { retainer in
                            var retainer = retainer
                            retainer.path = retainer.path.map { .init(via: $0.via, type: $0.type) }
                            return retainer
                        }
                    }
                }
            ),
            (
                "types[].retainersUnavailable",
                { report in
                    for index in report.types.indices { report.types[index].retainersUnavailable = [] }
                }
            ),
            (
                "tests[].globalState[].globalStateReason",
                { report in
                    report.tests = report.tests?.map { test in
                        var test = test
                        test.globalState = test.globalState.map {
                            var type = $0
                            type.globalStateReason = .oneTimeInitializer
                            return type
                        }
                        return test
                    }
                }
            ),
            (
                "tests[].ran",
                { report in
                    report.tests = report.tests?.map {
                        var test = $0
                        test.ran = true
                        return test
                    }
                }
            ),
            ("census.foldedTestCaseTypes", { $0.census?.foldedTestCaseTypes = 0 }),
            ("target.durationMilliseconds", { $0.target.durationMilliseconds = nil }),
            (
                "types[].timeline, peakTime, allocationsAtExit",
                { report in
                    for index in report.types.indices {
                        report.types[index].timeline = nil
                        report.types[index].peakTime = nil
                        report.types[index].allocationsAtExit = []
                    }
                }
            ),
            (
                "tests[].startedAt, finishedAt",
                { report in
                    report.tests = report.tests?.map {
                        var test = $0
                        (test.startedAt, test.finishedAt) = (nil, nil)
                        return test
                    }
                }
            ),
            (
                "census.entries[].timeline",
                { report in
                    for index in report.census?.entries.indices ?? 0..<0 { report.census?.entries[index].timeline = nil }
                }
            ),
            (
                "tests[].leaked[].allocations[].test",
                { report in
                    report.tests = report.tests?.map { test in
                        var test = test
                        test.leaked = test.leaked.map { leaked in
                            var leaked = leaked
                            leaked.allocations = leaked.allocations.map {
                                var group = $0
                                group.test = nil
                                return group
                            }
                            return leaked
                        }
                        return test
                    }
                }
            ),
        ]
        let unreachableLosses: [(field: String, lose: (inout AuditReport) -> Void)] = [
            ("unreachable", { $0.unreachable = nil }),
            ("unreachable.unavailable", { $0.unreachable?.unavailable = [] }),
            ("unreachable.processesChecked", { $0.unreachable?.processesChecked = 0 }),
            ("unreachable.types", { $0.unreachable?.types = [] }),
            ("unreachable.groups[].status", Self.eachUnreachableGroup { $0.status = .failing }),
            ("unreachable.groups[].internal", Self.eachUnreachableGroup { $0.isInternal = false }),
            ("unreachable.groups[].objects", Self.eachUnreachableGroup { $0.objects = 0 }),
            ("unreachable.groups[].allocations", Self.eachUnreachableGroup { $0.allocations = [] }),
            (
                "unreachable.groups[].path[].collectionStorage",
                Self.eachUnreachableGroup { $0.path = $0.path.map { Retainer.Step(via: $0.via, type: $0.type) } }
            ),
            (
                "baseline.gone[unreachable]",
                { $0.baseline?.gone.removeAll { if case .unreachable = $0.key { true } else { false } } }
            ),
        ]
        for (field, lose) in losses + unreachableLosses {
            let noticed = GoldenOutputTests.samples.contains { _, report in
                var lossy = report
                lose(&lossy)
                return Self.renderers.contains { $0.renderer.render(lossy) != $0.renderer.render(report) }
            }
            XCTAssertTrue(noticed, "no sample renders differently without \(field): the round trip could lose it unseen")
        }
    }

    /// A change made to every group of unreachable objects of a report.
    private static func eachUnreachableGroup(
        _ change: @escaping (inout UnreachableObjects.Group) -> Void
    ) -> (inout AuditReport) -> Void {
        { report in
            guard var unreachable = report.unreachable else { return }
            for index in unreachable.groups.indices { change(&unreachable.groups[index]) }
            report.unreachable = unreachable
        }
    }

    func testASchema2ReportWithoutTheUnreachableKeyReadsAsNotChecked() throws {
        let report = GoldenOutputTests.unreachable()
        let json = JSONReportRenderer().render(report)
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertNotNil(object["unreachable"] as? [String: Any])
        object["unreachable"] = nil
        // Without the groups, the verdict and the findings are what the rest of the report makes them.
        var summary = try XCTUnwrap(object["summary"] as? [String: Any])
        summary["verdict"] = "clean"
        summary["findings"] = ["failing": 0, "suppressed": 0, "baselined": 0]
        object["summary"] = summary
        let read = try JSONReportReader().decode(
            Array(try JSONSerialization.data(withJSONObject: object)), path: "without.json")
        XCTAssertNil(read.unreachable)
        XCTAssertEqual(read.verdict, .clean)
        XCTAssertTrue(JSONReportRenderer().render(read).contains("\"unreachable\" : null"))
        // A report that was not checked writes null, and reads it back as not checked.
        let unchecked = GoldenOutputTests.samples[0].1
        XCTAssertTrue(JSONReportRenderer().render(unchecked).contains("\"unreachable\" : null"))
        XCTAssertNil(try readBack(unchecked, name: "unchecked").unreachable)
        XCTAssertFalse(JSONReportRenderer.schema1.render(report).contains("\"unreachable\" :"), "schema 1 has no such key")
    }

    func testDamagedUnreachableObjectsAreOneClearError() throws {
        let json = JSONReportRenderer().render(GoldenOutputTests.unreachable())
        let cases: [(String, String, String)] = [
            (
                "\"shape\" : \"cycle\"", "\"shape\" : \"ring\"",
                "\"unreachable.groups[0].shape\" is \"ring\", not one of cycle, overRetained"
            ),
            ("\"objects\" : 22", "\"objects\" : -1", "\"unreachable.objects\" is -1, not a count"),
            ("\"bytes\" : 1872", "\"bytes\" : \"many\"", "wrong type at \"unreachable.bytes\""),
            ("\"processesChecked\" : 1", "\"processesChecked\" : true", "wrong type at \"unreachable.processesChecked\""),
            (
                "\"stack\" : 1", "\"stack\" : 99",
                "\"unreachable.groups[1].allocations[0].stack\" is 99, not an index of \"stacks\""
            ),
            (
                "\"internal\" : true,\n        \"objects\" : 4,\n        \"path\" : [\n          {\n            \"collectionStorage\" : false,\n            \"type\" : \"Foundation.__NSCFTimer\",\n            \"via\" : \"\"\n          }\n        ],\n        \"shape\" : \"overRetained\",\n        \"status\" : null",
                "\"internal\" : true,\n        \"objects\" : 4,\n        \"path\" : [\n          {\n            \"collectionStorage\" : false,\n            \"type\" : \"Foundation.__NSCFTimer\",\n            \"via\" : \"\"\n          }\n        ],\n        \"shape\" : \"overRetained\",\n        \"status\" : \"failing\"",
                "\"unreachable.groups[4].status\" is \"failing\", but the group is internal"
            ),
        ]
        for (original, damaged, expected) in cases {
            XCTAssertTrue(json.contains(original), original)
            let bytes = Array(json.replacingOccurrences(of: original, with: damaged).utf8)
            XCTAssertThrowsError(try JSONReportReader().decode(bytes, path: "damaged.json")) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(expected), "\(message) does not say \(expected)")
                XCTAssertFalse(message.contains("\n"), message)
            }
        }
    }

    func testAReportWrittenBeforeTheAddedFieldsReadsAsTheSchemaSays() throws {
        var report = GoldenOutputTests.retainersAndCapacity()
        report.droppedRecords = 0
        report.damagedRecords = 0
        var json = JSONReportRenderer.schema1.render(report)
        for field in ["\"exceededCapacity\" : true,", "\"kind\" : \"other\",", "\"collectionStorage\" : true,"] {
            XCTAssertTrue(json.contains(field), field)
            json = json.replacingOccurrences(of: field, with: "")
        }
        let read = try JSONReportReader().decode(Array(json.utf8), path: "old.json")
        XCTAssertTrue(read.exceededCapacity, "derived from incomplete with no record lost or damaged")
        XCTAssertNil(read.target.kind)
        XCTAssertEqual(read.types.first?.retainers?.first?.path.first?.isCollectionStorage, false)
    }

    /// The fields added to schema 1 after its first release, which an older report leaves out
    /// (and `target.kind`: other objects have a `kind` of their own).
    static let addedFields: Set<String> = [
        "durationMilliseconds", "exceededCapacity", "watchedInstances", "collectionStorage", "startedAtMilliseconds",
        "finishedAtMilliseconds", "allocationsAtExit", "timeline", "peakTimeMilliseconds",
    ]

    /// `value` with every added field left out, at any depth.
    private static func withoutAddedFields(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            return object.filter { !addedFields.contains($0.key) }.mapValues(withoutAddedFields)
        }
        if let array = value as? [Any] { return array.map(withoutAddedFields) }
        return value
    }

    func testEverySampleReadsWithoutTheAddedFields() throws {
        for (name, report) in GoldenOutputTests.schema1Samples {
            let object = try JSONSerialization.jsonObject(with: Data(JSONReportRenderer.schema1.render(report).utf8))
            var stripped = try XCTUnwrap(Self.withoutAddedFields(object) as? [String: Any])
            var target = try XCTUnwrap(stripped["target"] as? [String: Any])
            target["kind"] = nil
            stripped["target"] = target
            let older = try JSONSerialization.data(withJSONObject: stripped)
            let read = try JSONReportReader().decode(Array(older), path: "\(name).json")
            // What an older report holds reads the same; the added fields read as their absence.
            XCTAssertEqual(read.tests?.map(\.name), report.tests?.map(\.name), name)
            XCTAssertEqual(read.types.map(\.name), report.types.map(\.name), name)
            XCTAssertEqual(read.verdict, report.verdict, name)
            XCTAssertEqual(read.watchedInstances, 0, name)
            XCTAssertNil(read.target.durationMilliseconds, name)
            XCTAssertNil(read.target.kind, name)
            XCTAssertTrue(
                read.types.allSatisfy { $0.timeline == nil && $0.peakTime == nil && $0.allocationsAtExit.isEmpty }, name)
            XCTAssertTrue((read.tests ?? []).allSatisfy { $0.startedAt == nil && $0.finishedAt == nil }, name)
        }
    }

    // MARK: - Schema 1

    /// The JSON reports of the golden samples as the last release of schema 1 wrote them (every
    /// frame inside its allocation group), kept in Golden/schema-1.
    private static func schema1File(_ sample: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Golden/schema-1/\(sample).json")
        return Array(try Data(contentsOf: url))
    }

    func testEveryFormatOfEverySampleIsTheSameRenderedFromItsSchema1Report() throws {
        for (name, report) in GoldenOutputTests.schema1Samples {
            let read = try JSONReportReader().decode(try Self.schema1File(name), path: "\(name).json")
            for (format, renderer) in Self.renderers {
                XCTAssertEqual(
                    renderer.render(read), renderer.render(report), "\(name) in \(format) differs when rendered from schema 1")
            }
        }
    }

    func testTheSchema1RendererWritesWhatTheLastReleaseOfSchema1Wrote() throws {
        for (name, report) in GoldenOutputTests.schema1Samples {
            XCTAssertEqual(
                JSONReportRenderer.schema1.render(report), String(decoding: try Self.schema1File(name), as: UTF8.self), name)
        }
    }

    func testTheGoldenReportsMatchTheSchemaOfTheirVersion() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let script = """
            import glob, json, sys, jsonschema
            for schema, files in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
                schema = json.load(open(schema))
                jsonschema.Draft202012Validator.check_schema(schema)
                paths = sorted(glob.glob(files))
                assert paths, files
                for path in paths:
                    jsonschema.Draft202012Validator(schema).validate(json.load(open(path)))
            """
        let docs = root.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", script, docs.appendingPathComponent("report-schema.json").path,
            root.appendingPathComponent("Golden").path + "/*.json", docs.appendingPathComponent("report-schema-v1.json").path,
            root.appendingPathComponent("Golden/schema-1").path + "/*.json",
        ]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "a golden report does not match the schema of its version")
    }

    func testASchema1ReportComparesWithASchema2ReportOfTheSameRun() throws {
        for (name, report) in GoldenOutputTests.schema1Samples where report.notAudited == nil {
            let old = try JSONReportReader().decode(try Self.schema1File(name), path: "old.json")
            let new = try JSONReportReader().decode(Array(JSONReportRenderer().render(report).utf8), path: "new.json")
            let diff = ReportDiff(old: old, oldPath: "old.json", new: new, newPath: "new.json")
            XCTAssertEqual(diff, ReportDiff(old: new, oldPath: "old.json", new: new, newPath: "new.json"), name)
            XCTAssertTrue(diff.types.allSatisfy { $0.change == .unchanged }, name)
        }
    }

    func testEachStackAndFrameIsWrittenOnce() throws {
        // The same stack at the peak and at exit, and two stacks sharing their outer frames.
        var report = GoldenOutputTests.samples[0].1
        let stack = report.types[0].allocations[0].frames
        report.types[0].allocationsAtExit = [AuditReport.AllocationGroup(count: 1, frames: stack, truncated: false)]
        report.types[1].allocations = [AuditReport.AllocationGroup(count: 2, frames: Array(stack.dropFirst()), truncated: false)]
        let object = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(JSONReportRenderer().render(report).utf8)) as? [String: Any])
        let frames = try XCTUnwrap(object["frames"] as? [[String: Any]])
        let stacks = try XCTUnwrap(object["stacks"] as? [[Int]])
        XCTAssertEqual(Set(stacks.flatMap { $0 }).count, frames.count, "every frame is used, and each one once in the table")
        let types = try XCTUnwrap(object["types"] as? [[String: Any]])
        let peak = try XCTUnwrap((types[0]["allocations"] as? [[String: Any]])?.first)
        let atExit = try XCTUnwrap((types[0]["allocationsAtExit"] as? [[String: Any]])?.first)
        let other = try XCTUnwrap((types[1]["allocations"] as? [[String: Any]])?.first)
        XCTAssertNil(peak["frames"])
        let whole = stacks[try XCTUnwrap(peak["stack"] as? Int)]
        XCTAssertEqual(whole.count, stack.count)
        XCTAssertEqual(atExit["stack"] as? Int, peak["stack"] as? Int, "the stack at exit is the one at the peak")
        XCTAssertEqual(stacks[try XCTUnwrap(other["stack"] as? Int)], Array(whole.dropFirst()), "shared frames are shared")
        // A frame holds only what is known: no null, and `inlined` only when true.
        XCTAssertTrue(frames.allSatisfy { !$0.values.contains { $0 is NSNull } && $0["inlined"] as? Bool != false })
        XCTAssertEqual(try readBack(report, name: "shared").types.map(\.allocationsAtExit), report.types.map(\.allocationsAtExit))
    }

    func testStacksAndGroupsReferringToMoreFramesThanTheBoundAreRefused() throws {
        // Sample 0's stacks list 9 frames; its first type's groups refer to them, at the peak and
        // again at exit: 18 references.
        var report = GoldenOutputTests.samples[0].1
        report.types[0].allocationsAtExit = report.types[0].allocations
        let json = Array(JSONReportRenderer().render(report).utf8)
        let listed = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])?["stacks"] as? [[Int]]
        ).joined().count
        XCTAssertEqual(listed, 9)
        let references = report.types[0].allocations.map(\.frames.count).reduce(0, +) * 2
        XCTAssertEqual(references, 18)
        let read = try JSONReportReader(frameReferenceBound: 100).decode(json, path: "within.json")
        XCTAssertEqual(read.types[0].allocationsAtExit, report.types[0].allocationsAtExit)
        let cases: [(Int, String)] = [
            (8, "\"stacks[1]\" takes the frames \"stacks\" lists past 8 in all, more than any run writes"),
            (
                9,
                "\"types[0].allocationsAtExit[0].stack\" takes the frames the allocation groups refer to past 9 in all, more than any run writes"
            ),
        ]
        for (bound, reason) in cases {
            XCTAssertThrowsError(try JSONReportReader(frameReferenceBound: bound).decode(json, path: "bound.json")) {
                XCTAssertEqual($0 as? ReportFileError, .invalid(path: "bound.json", reason: reason), "bound \(bound)")
            }
        }
        XCTAssertEqual(JSONReportReader.largestFrameReferences, 4_194_304)
    }

    // MARK: - Bad files

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("leak-audit-reader-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func file(_ name: String, _ text: String) throws -> String {
        try file(name, Array(text.utf8))
    }

    /// The error reading `path` gives, and checks it is one line that names the file.
    private func error(reading path: String, file: StaticString = #filePath, line: UInt = #line) -> ReportFileError? {
        do {
            _ = try JSONReportReader().read(path: path)
            XCTFail("'\(path)' was read", file: file, line: line)
            return nil
        } catch {
            XCTAssertTrue(error.description.hasPrefix("'\(path)' "), error.description, file: file, line: line)
            XCTAssertFalse(error.description.contains("\n"), error.description, file: file, line: line)
            XCTAssertTrue(
                error.description.contains("leak-audit run --output-json"), "says what to do: \(error.description)",
                file: file, line: line)
            return error
        }
    }

    /// A valid report's JSON with `edit` applied to its parsed form.
    private func edited(_ edit: (inout [String: Any]) -> Void) throws -> String {
        let json = JSONReportRenderer().render(GoldenOutputTests.samples[0].1)
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        edit(&object)
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func testAFileThatCannotBeReadSaysWhy() throws {
        let missing = directory.appendingPathComponent("missing.json").path
        XCTAssertEqual(error(reading: missing), .unreadable(path: missing, reason: "no such file or directory"))
        XCTAssertEqual(error(reading: directory.path), .unreadable(path: directory.path, reason: "is a directory"))
        let empty = try file("empty.json", "")
        XCTAssertEqual(error(reading: empty), .unreadable(path: empty, reason: "it is empty"))
        let tooLarge = FileReadingError.unreadable(reason: "larger than 64 megabytes, so not a leak-audit file").reason
        XCTAssertEqual(error(reading: "/dev/zero"), .unreadable(path: "/dev/zero", reason: tooLarge))
        // A FIFO that no process writes to is not waited on.
        let fifo = directory.appendingPathComponent("fifo.json").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(error(reading: fifo), .unreadable(path: fifo, reason: "it is empty"))
        // 100 MB (sparse): refused from its size, before a byte is read.
        let large = directory.appendingPathComponent("large.json").path
        XCTAssertTrue(FileManager.default.createFile(atPath: large, contents: nil))
        XCTAssertEqual(truncate(large, 100_000_000), 0)
        XCTAssertEqual(error(reading: large), .unreadable(path: large, reason: tooLarge))
    }

    func testAFileThatIsNoReportSaysWhatItIs() throws {
        let json = JSONReportRenderer().render(GoldenOutputTests.samples[0].1)
        let truncated = try file("truncated.json", String(json.prefix(json.count / 2)))
        XCTAssertEqual(
            error(reading: truncated),
            .notAReport(path: truncated, reason: "it is not valid JSON (cut short, or not JSON at all)"))
        let latin1 = try file("latin1.json", [0x7B, 0x22, 0xE9, 0x22, 0x3A, 0x31, 0x7D])  // {"é":1} in Latin-1
        XCTAssertEqual(error(reading: latin1), .notAReport(path: latin1, reason: "it is not UTF-8 text"))
        let array = try file("array.json", "[1, 2]")
        XCTAssertEqual(error(reading: array), .notAReport(path: array, reason: "it is JSON, but not an object"))
        let baseline = try file("baseline.json", #"{"version": 1, "tool": "leak-audit", "findings": []}"#)
        XCTAssertEqual(error(reading: baseline), .notAReport(path: baseline, reason: "it is a leak-audit baseline, not a report"))
        let sarif = try file("log.sarif", #"{"version": "2.1.0", "runs": []}"#)
        XCTAssertEqual(error(reading: sarif), .notAReport(path: sarif, reason: "it is a SARIF log, not a leak-audit JSON report"))
        let other = try file("other.json", #"{"name": "x"}"#)
        XCTAssertEqual(
            error(reading: other),
            .notAReport(path: other, reason: "it has no \"schemaVersion\", so it is not a leak-audit JSON report"))
    }

    func testAnotherSchemaVersionIsNamed() throws {
        let newer = try file("v3.json", try edited { $0["schemaVersion"] = 3 })
        XCTAssertEqual(error(reading: newer), .unsupportedVersion(path: newer, version: 3))
        XCTAssertTrue(
            error(reading: newer)?.description.contains("schema version 3, and this leak-audit reads versions 1 to 2") == true)
        let older = try file("v0.json", try edited { $0["schemaVersion"] = 0 })
        XCTAssertEqual(error(reading: older), .unsupportedVersion(path: older, version: 0))
        let text = try file("text-version.json", #"{"schemaVersion": "1"}"#)
        XCTAssertEqual(error(reading: text), .invalid(path: text, reason: "\"schemaVersion\" is not a whole number"))
    }

    func testAValueTheSchemaDoesNotAllowIsNamedWhereItIs() throws {
        func types(_ edit: @escaping (inout [String: Any]) -> Void) throws -> String {
            try edited { object in
                var types = object["types"] as? [[String: Any]] ?? []
                edit(&types[0])
                object["types"] = types
            }
        }
        let cases: [(String, String, String)] = [
            ("missing.json", try edited { $0["tool"] = nil }, "missing \"tool\""),
            ("wrong-type.json", try edited { $0["types"] = "none" }, "wrong type at \"types\""),
            ("null.json", try types { $0["peakLive"] = NSNull() }, "wrong type at \"types[0].peakLive\""),
            (
                "huge.json", try types { $0["peakLive"] = 1e30 },
                "\"types[0].peakLive\" holds 1e+30, which is not a whole number written in digits, as every count is"
            ),
            (
                "large-count.json", try types { $0["peakLive"] = 1 << 50 },
                "\"types[0].peakLive\" is \(1 << 50), not a count from 0 to \(1 << 40)"
            ),
            (
                "negative.json", try types { $0["liveAtExit"] = -1 },
                "\"types[0].liveAtExit\" is -1, not a count from 0 to \(1 << 40)"
            ),
            (
                "status.json", try types { $0["status"] = "bogus" },
                "\"types[0].status\" is \"bogus\", not one of failing, largerThanBaseline, suppressed, baselined"
            ),
            (
                "address.json",
                try edited { object in
                    var frames = object["frames"] as? [[String: Any]] ?? []
                    frames[0]["address"] = "5000"
                    object["frames"] = frames
                },
                "\"frames[0].address\" is \"5000\", not a hexadecimal address (0x…)"
            ),
            (
                "line.json",
                try edited { object in
                    var frames = object["frames"] as? [[String: Any]] ?? []
                    frames[1]["line"] = -3
                    object["frames"] = frames
                },
                "\"frames[1].line\" is -3, out of range"
            ),
            (
                "stack-beyond.json",
                try types { $0["allocations"] = [["count": 3, "truncated": false, "test": NSNull(), "stack": 3]] },
                "\"types[0].allocations[0].stack\" is 3, not an index of \"stacks\" (indexes 0 to 2)"
            ),
            (
                "stack-negative.json",
                try types { $0["allocationsAtExit"] = [["count": 3, "truncated": false, "test": NSNull(), "stack": -1]] },
                "\"types[0].allocationsAtExit[0].stack\" is -1, not an index of \"stacks\" (indexes 0 to 2)"
            ),
            (
                "stack-missing.json", try types { $0["allocations"] = [["count": 3, "truncated": false, "test": NSNull()]] },
                "missing \"types[0].allocations[0].stack\""
            ),
            (
                "frame-beyond.json", try edited { $0["stacks"] = [[0, 1], [9], []] },
                "\"stacks[1][0]\" is 9, not an index of \"frames\" (indexes 0 to 8)"
            ),
            (
                "no-frames.json", try edited { $0["frames"] = [] as [Any] },
                "\"stacks[0][0]\" is 0, not an index of \"frames\" (which is empty)"
            ),
            ("stacks-missing.json", try edited { $0["stacks"] = nil }, "missing \"stacks\""),
            ("frames-missing.json", try edited { $0["frames"] = nil }, "missing \"frames\""),
            (
                "stack-self.json", try edited { $0["stacks"] = [[0, [0]], [], []] as [Any] },
                "wrong type at \"stacks[0][1]\""
            ),
            (
                "schema-1-frames.json",
                try edited { object in
                    object["schemaVersion"] = 1
                    var types = object["types"] as? [[String: Any]] ?? []
                    types[0]["allocations"] = [["count": 3, "truncated": false, "test": NSNull(), "stack": 0]]
                    object["types"] = types
                },
                "missing \"types[0].allocations[0].frames\""
            ),
            (
                "reason.json",
                try edited { object in
                    var target = object["target"] as? [String: Any] ?? [:]
                    target["notAuditedReason"] = "tired"
                    object["target"] = target
                },
                "\"target.notAuditedReason\" is \"tired\", not one of neverAttached, staticRuntime, recordFormatMismatch, notSwift, noTestsRan"
            ),
            (
                "tool.json", try edited { $0["tool"] = ["name": "other", "version": "1"] },
                "\"tool.name\" is 'other', not leak-audit"
            ),
            (
                "sample.json",
                try types { type in
                    var timeline = type["timeline"] as? [String: Any] ?? [:]
                    timeline["samples"] = [[0, 1, 1]]
                    type["timeline"] = timeline
                },
                "\"types[0].timeline.samples[0]\" has 3 values, not [time, low, high, last]"
            ),
            (
                "unsorted.json",
                try types { type in
                    var timeline = type["timeline"] as? [String: Any] ?? [:]
                    timeline["samples"] = [[5, 1, 1, 1], [5, 1, 2, 2]]
                    type["timeline"] = timeline
                },
                "\"types[0].timeline.samples[1][0]\" is 5, not later than the sample before it (samples are in time order)"
            ),
            (
                "time.json", try types { $0["peakTimeMilliseconds"] = -5 },
                "\"types[0].peakTimeMilliseconds\" is -5, not a time from 0 to \(1 << 40) milliseconds"
            ),
        ]
        for (name, json, reason) in cases {
            let path = try file(name, json)
            XCTAssertEqual(error(reading: path), .invalid(path: path, reason: reason), name)
        }
    }

    func testWhatJSONAllowsAndReadersTakeDifferentlyIsRefusedNamingItsCause() throws {
        // A failing run whose name and peak are markers to replace in the text.
        let json = try edited { object in
            var types = object["types"] as? [[String: Any]] ?? []
            types[0]["name"] = "NAME-MARKER"
            types[0]["allocatedTotal"] = 987_654_321
            object["types"] = types
        }
        XCTAssertTrue(json.contains("\"summary\""))
        let cases: [(String, String, String)] = [
            // A clean summary first, the real one after: other readers take the last.
            (
                "duplicate.json", "{\"summary\": {\"verdict\": \"clean\"}, " + json.dropFirst(),
                "\"summary\" is given twice in one object (a duplicate key, which JSON readers take differently)"
            ),
            (
                "duplicate-inner.json", json.replacingOccurrences(of: "\"NAME-MARKER\"", with: "\"A\", \"name\": \"B\""),
                "\"types[0].name\" is given twice in one object (a duplicate key, which JSON readers take differently)"
            ),
            (
                "tiny.json", json.replacingOccurrences(of: "987654321", with: "1e-400"),
                "\"types[0].allocatedTotal\" holds 1e-400, which is not a whole number written in digits, as every count is"
            ),
            (
                "fraction.json", json.replacingOccurrences(of: "987654321", with: "2.0"),
                "\"types[0].allocatedTotal\" holds 2.0, which is not a whole number written in digits, as every count is"
            ),
            (
                "beyond.json", json.replacingOccurrences(of: "987654321", with: "99999999999999999999"),
                "\"types[0].allocatedTotal\" holds 99999999999999999999, too large for a count"
            ),
            (
                "surrogate.json", json.replacingOccurrences(of: "NAME-MARKER", with: "App.\\ud800Model"),
                "\"types[0].name\" holds a lone surrogate (\\ud800), which is no character"
            ),
            (
                "low-surrogate.json", json.replacingOccurrences(of: "NAME-MARKER", with: "App.\\uDC00"),
                "\"types[0].name\" holds a lone surrogate (\\uDC00), which is no character"
            ),
        ]
        for (name, text, reason) in cases {
            let path = try file(name, text)
            XCTAssertEqual(error(reading: path), .invalid(path: path, reason: reason), name)
        }
        // A pair of surrogates is a character; keys written with escapes are the same keys.
        let pair = try file("pair.json", json.replacingOccurrences(of: "NAME-MARKER", with: "App.\\ud83e\\udd8aFox"))
        XCTAssertEqual(try JSONReportReader().read(path: pair).types[0].name, "App.🦊Fox")
        let escapedKey = try file(
            "escaped-key.json", "{\"summ\\u0061ry\": {\"verdict\": \"clean\"}, " + json.dropFirst())
        XCTAssertEqual(
            error(reading: escapedKey),
            .invalid(
                path: escapedKey,
                reason: "\"summary\" is given twice in one object (a duplicate key, which JSON readers take differently)"))
        // Nested as deep as a file likes: one line, no deep recursion.
        let deep = String(repeating: "{\"a\":", count: 100_000) + "{\"k\":1,\"k\":2}" + String(repeating: "}", count: 100_001)
        let problem = try XCTUnwrap(StrictJSON.firstProblem(in: Array(deep.utf8)))
        XCTAssertLessThan(problem.count, 400, problem)
        XCTAssertTrue(
            problem.hasSuffix("a.a.a.k\" is given twice in one object (a duplicate key, which JSON readers take differently)"))
    }

    func testADerivedFieldThatDisagreesIsCaught() throws {
        func summary(_ key: String, _ value: Any) throws -> String {
            try edited { object in
                var summary = object["summary"] as? [String: Any] ?? [:]
                summary[key] = value
                object["summary"] = summary
            }
        }
        let verdict = try file("verdict.json", try summary("verdict", "clean"))
        XCTAssertEqual(
            error(reading: verdict),
            .inconsistent(
                path: verdict,
                reason: "\"summary.verdict\" is \"clean\", but the report's types, tests and records make it \"budgetExceeded\""))
        let failing = try file("failing.json", try summary("findings", ["failing": 0, "suppressed": 1, "baselined": 1]))
        XCTAssertEqual(
            error(reading: failing),
            .inconsistent(
                path: failing, reason: "\"summary.findings.failing\" is 0, but the report's types, tests and records make it 2"))
        let exceeded = try file(
            "exceeded.json",
            try edited { object in
                var types = object["types"] as? [[String: Any]] ?? []
                types[0]["peakLive"] = 1
                object["types"] = types
            })
        XCTAssertEqual(
            error(reading: exceeded),
            .inconsistent(path: exceeded, reason: "\"types[0].exceeded\" is true, but its peakLive 1 and max 1 make it false"))
    }

    func testAReportWrittenBeforeTheTestsLeakedVerdictStillReads() throws {
        // Only tests leaked: earlier versions wrote budgetExceeded for that; any other verdict
        // that disagrees is still caught.
        let json = JSONReportRenderer().render(GoldenOutputTests.samples[1].1)
        XCTAssertTrue(json.contains(#""verdict" : "testsLeaked""#))
        let older = try file(
            "older.json", json.replacingOccurrences(of: #""verdict" : "testsLeaked""#, with: #""verdict" : "budgetExceeded""#))
        XCTAssertEqual(try JSONReportReader().read(path: older).verdict, .testsLeaked)
        let wrong = try file(
            "wrong.json", json.replacingOccurrences(of: #""verdict" : "testsLeaked""#, with: #""verdict" : "clean""#))
        XCTAssertEqual(
            error(reading: wrong),
            .inconsistent(
                path: wrong,
                reason: "\"summary.verdict\" is \"clean\", but the report's types, tests and records make it \"testsLeaked\""))
    }

    func testAGoodFileReadsWithNoError() throws {
        let path = try file("good.json", JSONReportRenderer().render(GoldenOutputTests.samples[1].1))
        let report = try JSONReportReader().read(path: path)
        XCTAssertEqual(report.tests?.count, 3)
        XCTAssertEqual(report.target.kind, .swiftTestBundle)
    }
}
