/// A property of XCTest test case objects that kept instances alive after their tests, across
/// every test that set it (`TestReport.keptByTestCase`): one entry a person acts on once.
public struct TestCaseProperty: Sendable, Hashable {
    /// The test case class, without its module (`ContainerTests`).
    public var holder: String
    /// The property's name (`container`).
    public var property: String
    /// What it held, by type, with instances added over its tests; most first.
    public var types: [(type: String, count: Int)] {
        typeCounts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { ($0.key, $0.value) }
    }
    /// The tests whose instances it held, in test order.
    public var tests: [String]
    private var typeCounts: [String: Int]

    /// The properties of `tests`' `keptByTestCase` findings, by the first step of each retaining
    /// path (the test case's property); most tests first. Instances without such a path (a report
    /// from elsewhere) count under the property `?`.
    public static func grouped(_ tests: [AuditReport.TestReport]) -> [TestCaseProperty] {
        struct Key: Hashable {
            var holder: String
            var property: String
        }
        var found: [Key: TestCaseProperty] = [:]
        var order: [Key] = []
        for test in tests {
            for type in test.keptByTestCase {
                var counts: [Key: Int] = [:]
                for retainer in type.retainers ?? [] where retainer.root.kind == .testCase {
                    let holder = retainer.path.first.map { shortName($0.type) } ?? "?"
                    let property = retainer.path.dropFirst().first?.via ?? "?"
                    counts[Key(holder: holder, property: property), default: 0] += retainer.count
                }
                let unexplained = type.count - counts.values.reduce(0, +)
                if unexplained > 0 { counts[Key(holder: "?", property: "?"), default: 0] += unexplained }
                // By name, not the dictionary's order (which changes from run to run): a type that
                // several properties held lists them the same way in every rendering.
                for (key, count) in counts.sorted(by: { ($0.key.holder, $0.key.property) < ($1.key.holder, $1.key.property) }) {
                    if found[key] == nil {
                        found[key] = TestCaseProperty(holder: key.holder, property: key.property, tests: [], typeCounts: [:])
                        order.append(key)
                    }
                    if found[key]?.tests.last != test.name { found[key]?.tests.append(test.name) }
                    found[key]?.typeCounts[type.type, default: 0] += count
                }
            }
        }
        return order.compactMap { found[$0] }.enumerated().sorted {
            ($1.element.tests.count, $0.offset) < ($0.element.tests.count, $1.offset)
        }.map(\.element)
    }

    /// `ContainerTests` for `SwinjectTests.ContainerTests`; generic arguments kept.
    private static func shortName(_ type: String) -> String {
        let base = type.prefix { $0 != "<" }
        guard let dot = base.lastIndex(of: ".") else { return type }
        return String(type[type.index(after: dot)...])
    }
}
