import FoundationEssentials
import LeakAuditModel
import LeakAuditPresentation

/// The report for CI test reports: JUnit XML with one `<testsuite name="leak-audit">` whose test
/// cases are the audited types and, with `--leaks-per-test`, a `<testsuite name="leak-audit tests">`
/// whose test cases are the audited tests.
///
/// A type's class name is the module part of its name. A type over budget fails with
/// `type="budget-exceeded"`, a test that left instances alive with `type="test-leaked"`: the counts
/// are in the message and the allocation stacks in the body, as the text report shows them. A target
/// that could not be audited is one test case in error. A suppressed or baselined finding is a
/// `<skipped>` test case whose message gives the rule and reason, or what the baseline records. The
/// census, when asked for, is the first suite's `<system-out>`; warnings and baseline entries that
/// are gone are its `<system-err>`. A run that checked for unreachable objects has one more test
/// case, `unreachable objects`, failing with `type="unreachable-objects"` when a group of the
/// program's types does. The report records no durations, so every `time` is 0.
public struct JUnitReportRenderer: ReportRenderer {
    /// The suite's name, and the class name of types whose name has no module part.
    public static let suiteName = "leak-audit"

    /// Paths under this directory are shown relative to it in stacks.
    public var workingDirectory: String

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil) {
        self.workingDirectory = workingDirectory ?? FileManager.default.currentDirectoryPath
    }

    /// One test case: its class name, name, and the failure or error it ended with.
    private struct TestCase {
        enum Outcome {
            case passed
            case skipped(message: String)
            case failure(message: String, type: String, body: String)
            case error(message: String, type: String, body: String)
        }
        var className: String
        var name: String
        var outcome: Outcome
    }

    /// One test suite: its test cases and its standard output and error.
    private struct TestSuite {
        var name: String
        var cases: [TestCase]
        var systemOut: String?
        var systemErr: String?

        var failures: Int { cases.filter { if case .failure = $0.outcome { true } else { false } }.count }
        var errors: Int { cases.filter { if case .error = $0.outcome { true } else { false } }.count }
        var skipped: Int { cases.filter { if case .skipped = $0.outcome { true } else { false } }.count }
    }

    /// Renders the report as a JUnit XML document.
    public func render(_ report: AuditReport) -> String {
        let phrases = ReportPhrases(workingDirectory: workingDirectory)
        var types = TestSuite(name: Self.suiteName, cases: [])
        var suites: [TestSuite] = []
        if let explanation = phrases.notAuditedExplanation(report) {
            types.cases.append(
                TestCase(
                    className: Self.suiteName, name: report.target.path,
                    outcome: .error(
                        message: phrases.summarySentence(report), type: "not-audited",
                        body: explanation.joined(separator: "\n"))))
        } else {
            types.cases = report.types.map { typeCase($0, phrases, report.baseline) }
            if let losses = phrases.incompleteness(report) {
                // A CI test report must not look green over counts that may be wrong.
                types.cases.append(
                    TestCase(
                        className: Self.suiteName, name: "record stream",
                        outcome: .error(
                            message: "the report is incomplete (\(losses)): its counts may be wrong", type: "incomplete",
                            body: report.warnings.joined(separator: "\n"))))
            }
            if let census = report.census {
                types.systemOut = phrases.censusBlock(census, inspected: report.target.kind == .inspectedProcess)
                    .joined(separator: "\n")
            }
            if let unreachable = report.unreachable {
                types.cases.append(unreachableCase(unreachable, report.unreachableFindings, phrases, report.baseline))
            }
        }
        var notes = report.warnings.map { "warning: \($0)" }
        if !report.target.outcome.succeeded { notes.append("the target \(report.target.outcome.phrase)") }
        if let baseline = report.baseline {
            for entry in baseline.gone {
                notes.append("gone from the baseline '\(baseline.path)': \(entry.key) (it records \(entry.count))")
            }
        }
        if !notes.isEmpty { types.systemErr = notes.joined(separator: "\n") }
        suites.append(types)
        if let tests = report.tests, report.notAudited == nil {
            suites.append(
                TestSuite(name: Self.suiteName + " tests", cases: tests.map { testCase($0, phrases, report.baseline) }))
        }

        let total = TestSuite(name: Self.suiteName, cases: suites.flatMap(\.cases))
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites \(Self.counts(total))>\n"
        for suite in suites {
            xml += "  <testsuite \(Self.counts(suite))>\n"
            xml += "    <properties>\n"
            let properties = [
                ("leak-audit.version", report.tool.version),
                ("target", report.target.path),
                ("target.outcome", report.target.outcome.phrase),
                ("summary", phrases.summarySentence(report)),
            ]
            for (name, value) in properties {
                xml += "      <property name=\"\(Self.attribute(name))\" value=\"\(Self.attribute(value))\"/>\n"
            }
            xml += "    </properties>\n"
            for testCase in suite.cases { xml += Self.element(testCase) }
            if let systemOut = suite.systemOut { xml += "    <system-out>" + Self.text(systemOut) + "</system-out>\n" }
            if let systemErr = suite.systemErr { xml += "    <system-err>" + Self.text(systemErr) + "</system-err>\n" }
            xml += "  </testsuite>\n"
        }
        xml += "</testsuites>\n"
        return xml
    }

    /// A tracked type: it passes within its budget and fails over it.
    private func typeCase(
        _ type: AuditReport.TrackedType, _ phrases: ReportPhrases, _ baseline: AuditReport.BaselineComparison?
    ) -> TestCase {
        guard type.exceeded else {
            return TestCase(className: type.moduleName ?? Self.suiteName, name: type.name, outcome: .passed)
        }
        let surplus = type.peakLive.subtractingReportingOverflow(type.max).partialValue
        let counts = "\(phrases.budget(type)), peak \(type.peakLive), alive at exit \(type.liveAtExit) (\(surplus) over budget)"
        if let skipped = Self.skippedMessage(type.status, phrases) {
            return TestCase(
                className: type.moduleName ?? Self.suiteName, name: type.name, outcome: .skipped(message: "\(skipped): \(counts)")
            )
        }
        return TestCase(
            className: type.moduleName ?? Self.suiteName, name: type.name,
            outcome: .failure(
                message: type.retainers?.isEmpty == false
                    ? counts + ". " + ReportPhrases.retainerSentences(type.retainers) : counts,
                type: FindingRule.budgetExceeded.id,
                body: phrases.exceededBlock(type, baseline: baseline).joined(separator: "\n")))
    }

    /// The unreachable check, one test case: it fails when a group of the program's types does, is
    /// skipped when every group is suppressed or baselined, and passes when there is none.
    private func unreachableCase(
        _ unreachable: UnreachableObjects, _ findings: [UnreachableObjects.Group], _ phrases: ReportPhrases,
        _ baseline: AuditReport.BaselineComparison?
    ) -> TestCase {
        let name = "unreachable objects"
        let failing = unreachable.failingGroups
        guard !failing.isEmpty else {
            let reasons = findings.compactMap { group in
                Self.skippedMessage(group.status, phrases).map { "\(ReportPhrases.unreachableHeadline(group)) \($0)" }
            }
            let outcome: TestCase.Outcome = reasons.isEmpty ? .passed : .skipped(message: reasons.joined(separator: "; "))
            return TestCase(className: Self.suiteName, name: name, outcome: outcome)
        }
        return TestCase(
            className: Self.suiteName, name: name,
            outcome: .failure(
                message: failing.map(ReportPhrases.unreachableSentence).joined(separator: " "),
                type: FindingRule.unreachableObjects.id,
                body: phrases.unreachableBlock(unreachable, baseline: baseline).joined(separator: "\n")))
    }

    /// `suppressed by type:App.X (.leak-audit.json): reason` or `baselined (the baseline records 2)`,
    /// nil for a failing finding.
    private static func skippedMessage(_ status: FindingStatus, _ phrases: ReportPhrases) -> String? {
        switch status {
        case .failing, .largerThanBaseline: nil
        case .suppressed(let suppression): "suppressed \(phrases.suppressionLine(suppression))"
        case .baselined(let recorded): "baselined (the baseline records \(recorded))"
        }
    }

    /// An audited test (`--leaks-per-test`): `Module.Class/testName` becomes class name
    /// `Module.Class` and name `testName`; it fails when it left instances alive.
    private func testCase(
        _ test: AuditReport.TestReport, _ phrases: ReportPhrases, _ baseline: AuditReport.BaselineComparison?
    ) -> TestCase {
        var className = Self.suiteName
        var name = test.name
        if let slash = test.name.firstIndex(of: "/"), slash != test.name.startIndex {
            className = String(test.name[..<slash])
            name = String(test.name[test.name.index(after: slash)...])
        }
        guard !test.leaked.isEmpty else { return TestCase(className: className, name: name, outcome: .passed) }
        let failing = test.leaked.filter(\.status.fails)
        guard !failing.isEmpty else {
            let reasons = test.leaked.compactMap { leaked in
                Self.skippedMessage(leaked.status, phrases).map {
                    "\(leaked.count) \(ReportPhrases.escaped(leaked.type)) \($0)"
                }
            }
            return TestCase(className: className, name: name, outcome: .skipped(message: reasons.joined(separator: "; ")))
        }
        let summary = failing.map { "\($0.count) \(ReportPhrases.escaped($0.type))" }.joined(separator: ", ")
        var body = ["LEAKED \(ReportPhrases.escaped(test.name)): \(summary)"]
        for leaked in failing {
            body.append("  \(leaked.count) \(ReportPhrases.escaped(leaked.type)) alive after the test:")
            if let comparison = ReportPhrases.baselineComparison(leaked.status, baseline, unit: "") {
                body.append("    " + comparison)
            }
            body.append(contentsOf: phrases.allocationSites(leaked.allocations, indent: "    ", typeName: leaked.type))
            if let retainers = leaked.retainers {
                body.append(contentsOf: phrases.retainerLines(retainers, unavailable: [], indent: "    "))
            }
        }
        let held = failing.map { ReportPhrases.retainerSentences($0.retainers) }.filter { !$0.isEmpty }
        return TestCase(
            className: className, name: name,
            outcome: .failure(
                message: held.isEmpty
                    ? "left \(summary) alive after it finished"
                    : (["left \(summary) alive after it finished."] + held).joined(separator: " "),
                type: FindingRule.testLeaked.id,
                body: body.joined(separator: "\n")))
    }

    /// `name="…" tests="…" failures="…" errors="…" skipped="…" time="0"`.
    private static func counts(_ suite: TestSuite) -> String {
        "name=\"\(attribute(suite.name))\" tests=\"\(suite.cases.count)\" failures=\"\(suite.failures)\" "
            + "errors=\"\(suite.errors)\" skipped=\"\(suite.skipped)\" time=\"0\""
    }

    /// A `<testcase>` element with its failure or error.
    private static func element(_ testCase: TestCase) -> String {
        let opening =
            "    <testcase classname=\"\(attribute(testCase.className))\" name=\"\(attribute(testCase.name))\" time=\"0\""
        let element: String
        let message: String
        let type: String
        let body: String
        switch testCase.outcome {
        case .passed: return opening + "/>\n"
        case .skipped(let message):
            return opening + ">\n" + "      <skipped message=\"\(attribute(message))\"/>\n" + "    </testcase>\n"
        case .failure(let m, let t, let b): (element, message, type, body) = ("failure", m, t, b)
        case .error(let m, let t, let b): (element, message, type, body) = ("error", m, t, b)
        }
        return opening + ">\n"
            + "      <\(element) message=\"\(attribute(message))\" type=\"\(attribute(type))\">\(text(body))</\(element)>\n"
            + "    </testcase>\n"
    }

    /// Escapes character data: `&`, `<` and `>` become references, a carriage return a character
    /// reference (a parser would turn a raw one into a line feed), and what XML 1.0 does not allow
    /// is replaced.
    static func text(_ value: String) -> String {
        escaped(value) { scalar in
            switch scalar {
            case "\r": "&#13;"
            default: nil
            }
        }
    }

    /// Escapes an attribute value: as character data, and quotes, tabs and line breaks as
    /// references too (a parser would turn raw ones into spaces).
    static func attribute(_ value: String) -> String {
        escaped(value) { scalar in
            switch scalar {
            case "\"": "&quot;"
            case "'": "&apos;"
            case "\t": "&#9;"
            case "\n": "&#10;"
            case "\r": "&#13;"
            default: nil
            }
        }
    }

    private static func escaped(_ value: String, _ extra: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            if let replacement = extra(scalar) {
                result += replacement
                continue
            }
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            default:
                if isAllowedInXML(scalar) {
                    result.unicodeScalars.append(scalar)
                } else {
                    // Not even a character reference may name it: write the text report's escape.
                    result += "\\u{" + String(scalar.value, radix: 16) + "}"
                }
            }
        }
        return result
    }

    /// XML 1.0's `Char` production: tab, line feed, carriage return, and everything from U+0020
    /// but U+FFFE and U+FFFF (Swift strings hold no surrogates).
    private static func isAllowedInXML(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD: true
        case 0x20...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }
}
