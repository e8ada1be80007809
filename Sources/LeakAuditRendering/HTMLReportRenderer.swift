import LeakAuditModel
import LeakAuditPresentation

/// The report as one self-contained HTML page: the verdict, for each type over budget (and the
/// census's largest types) its live count over time against its budget and a flame graph of where
/// its instances were allocated, the per-test table, and who holds them. Styles and the small script
/// (zoom, view switch, sorting) are inline and the page loads nothing: it works from `file://` and
/// as a CI artifact, and its Content-Security-Policy forbids any request. Everything from the target
/// is escaped; the charts are drawn here, as SVG, so they show without the script too.
public struct HTMLReportRenderer: ReportRenderer {
    /// How frames and sentences read: paths relative to the working directory, no width limit.
    public var phrases: ReportPhrases

    /// Creates the renderer; `workingDirectory` defaults to the process's.
    public init(workingDirectory: String? = nil) {
        phrases = ReportPhrases(workingDirectory: workingDirectory, width: nil, verbose: true)
    }

    /// Renders the whole page.
    public func render(_ report: AuditReport) -> String {
        var page = HTMLPage()
        let verdict = report.verdict
        page.line("<!DOCTYPE html>")
        page.line("<html lang=\"en\">")
        page.line("<head>")
        page.line("<meta charset=\"utf-8\">")
        page.line(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        )
        page.line("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        page.line("<title>leak-audit: \(html(verdictTitle(verdict))) — \(html(report.target.path))</title>")
        page.line("<style>\(Self.style)</style>")
        // Only a page with the section carries its style: every other page stays as it was.
        if report.unreachable != nil { page.line("<style>\(Self.unreachableStyle)</style>") }
        page.line("</head>")
        page.line("<body>")
        summary(report, into: &page)
        if let explanation = phrases.notAuditedExplanation(report) {
            page.line("<section id=\"not-audited\"><h2>Not audited</h2>")
            for line in explanation where !line.isEmpty { page.line("<p>\(html(line))</p>") }
            page.line("</section>")
        }
        let everyCharted = chartedTypes(report)
        // A chart and a flame graph each for the first ones; a row each for the rest, so that the
        // page stays a few megabytes with thousands of types over budget.
        let charted = Array(everyCharted.prefix(Self.chartedTypeLimit))
        let uncharted = everyCharted.dropFirst(Self.chartedTypeLimit).filter { $0.budget != nil }
        // When tests' leaks are what failed, they come first.
        let testsFirst = report.failingTypes.isEmpty && report.testLeaks.contains { $0.leaked.status.fails }
        if testsFirst, let tests = report.tests { testTable(tests, report: report, charted: charted, into: &page) }
        // When unreachable objects are what failed, they come first.
        let unreachableFirst = report.verdict == .unreachableObjects
        if unreachableFirst, let unreachable = report.unreachable { unreachableSection(unreachable, into: &page) }
        if !charted.isEmpty {
            page.line("<section id=\"types\"><h2>Types</h2>")
            for (index, type) in charted.enumerated() { typeSection(type, index: index, report: report, into: &page) }
            if !uncharted.isEmpty { unchartedTable(uncharted, into: &page) }
            page.line("</section>")
        }
        let within = report.types.filter { !$0.exceeded }
        if !within.isEmpty {
            page.line("<section id=\"within-budget\"><h2>Within budget</h2>")
            page.line("<table class=\"sortable\"><thead><tr>")
            page.line("<th>Type</th><th data-numeric>Max</th><th data-numeric>Peak</th><th data-numeric>Alive at exit</th>")
            page.line("</tr></thead><tbody>")
            for type in within {
                page.line(
                    "<tr><td>\(html(type.name, longest: Self.longestInRow))</td><td>\(type.max)</td><td>\(type.peakLive)</td><td>\(type.liveAtExit)</td></tr>"
                )
            }
            page.line("</tbody></table></section>")
        }
        if !testsFirst, let tests = report.tests { testTable(tests, report: report, charted: charted, into: &page) }
        if !unreachableFirst, let unreachable = report.unreachable { unreachableSection(unreachable, into: &page) }
        if let census = report.census {
            censusTable(census, inspected: report.target.kind == .inspectedProcess, charted: charted, into: &page)
        }
        if let largest = report.largestRetained {
            // `leak-audit inspect`: what each object alone keeps alive, and its path.
            page.line("<section id=\"largest-retained\"><h2>Largest retained</h2>")
            if largest.isEmpty { page.line("<p>No Swift object.</p>") }
            retainerGraphs(largest, heading: nil, into: &page)
            page.line("</section>")
        }
        if !report.warnings.isEmpty {
            page.line("<section id=\"warnings\"><h2>Warnings</h2><ul>")
            for warning in report.warnings { page.line("<li>\(html(warning))</li>") }
            page.line("</ul></section>")
        }
        page.line(
            "<footer>\(html(report.tool.name)) \(html(report.tool.version)) · \(html(phrases.summarySentence(report)))</footer>")
        page.line("<script>\(Self.script)</script>")
        page.line("</body>")
        page.line("</html>")
        return page.text
    }

    // MARK: - Summary

    private func verdictTitle(_ verdict: AuditVerdict) -> String {
        switch verdict {
        case .clean: "clean"
        case .budgetExceeded: "over budget"
        case .testsLeaked: "leaked"
        case .unreachableObjects: "unreachable objects"
        case .incomplete: "incomplete"
        case .targetFailed: "target failed"
        case .notAudited: "not audited"
        }
    }

    private func summary(_ report: AuditReport, into page: inout HTMLPage) {
        let verdict = report.verdict
        page.line("<header id=\"summary\" class=\"verdict-\(verdict.name)\">")
        page.line("<h1><span class=\"verdict\">\(html(verdictTitle(verdict)))</span> \(html(report.target.path))</h1>")
        page.line("<p class=\"sentence\">\(html(phrases.summarySentence(report)))</p>")
        page.line("<dl>")
        let arguments = report.target.arguments.map { ReportPhrases.escaped($0) }.joined(separator: " ")
        if !arguments.isEmpty { page.line("<dt>Arguments</dt><dd>\(html(arguments))</dd>") }
        page.line("<dt>Exit</dt><dd id=\"exit\">\(html(report.target.outcome.phrase))</dd>")
        if let inspected = ReportPhrases.inspectionHeadline(report) {
            page.line("<dt>Inspected</dt><dd id=\"inspected\">\(html(inspected))</dd>")
        }
        if let duration = report.target.durationMilliseconds {
            page.line("<dt>Ran for</dt><dd>\(html(Self.duration(duration)))</dd>")
        }
        if let testsRun = report.target.testsRun { page.line("<dt>Tests audited</dt><dd id=\"tests-run\">\(testsRun)</dd>") }
        if let skipped = report.target.testsSkipped, skipped > 0 {
            page.line("<dt>Tests skipped</dt><dd id=\"tests-skipped\">\(skipped)</dd>")
        }
        page.line("<dt>Tracked types</dt><dd>\(report.types.count)</dd>")
        page.line("<dt>Over budget</dt><dd id=\"over-budget\">\(report.exceededTypes.count)</dd>")
        if report.watchedInstances > 0 { page.line("<dt>Objects watched</dt><dd>\(report.watchedInstances)</dd>") }
        if let unreachable = report.unreachable {
            let failing = unreachable.failingGroups.reduce(0) { $0 + $1.objects }
            page.line("<dt>Unreachable</dt><dd id=\"unreachable-objects\">\(failing)</dd>")
        }
        if let incompleteness = phrases.incompleteness(report) {
            page.line("<dt>Incomplete</dt><dd>\(html(incompleteness))</dd>")
        }
        page.line("</dl>")
        page.line("</header>")
    }

    // MARK: - Types

    /// What one chart and flame graph show: a type over budget, or a census entry.
    private struct ChartedType {
        var name: String
        var anchor: String
        var budget: Int?
        var peak: Int
        var peakTime: Int?
        var liveAtExit: Int
        var allocated: Int?
        var status: FindingStatus?
        var timeline: LiveCountTimeline?
        var atPeak: [AuditReport.AllocationGroup]
        var atExit: [AuditReport.AllocationGroup]
        var retainers: [Retainer]?
    }

    /// Types over budget, then the census entries that have a timeline (the largest).
    private func chartedTypes(_ report: AuditReport) -> [ChartedType] {
        var charted = report.exceededTypes.enumerated().map { index, type in
            ChartedType(
                name: type.name, anchor: "type-\(index)", budget: type.max, peak: type.peakLive, peakTime: type.peakTime,
                liveAtExit: type.liveAtExit, allocated: type.allocatedTotal, status: type.status, timeline: type.timeline,
                atPeak: type.allocations, atExit: type.allocationsAtExit, retainers: type.retainers)
        }
        for (index, entry) in (report.census?.entries ?? []).enumerated() where entry.timeline != nil {
            let peak = entry.timeline?.samples.map(\.high).max() ?? entry.liveAtExit
            charted.append(
                ChartedType(
                    name: entry.name, anchor: "census-\(index)", budget: nil, peak: Swift.max(peak, entry.liveAtExit),
                    peakTime: nil, liveAtExit: entry.liveAtExit, allocated: nil, status: nil, timeline: entry.timeline,
                    atPeak: [], atExit: entry.allocations, retainers: nil))
        }
        return charted
    }

    private func typeSection(_ type: ChartedType, index: Int, report: AuditReport, into page: inout HTMLPage) {
        let statusName = type.status.map { $0.fails ? "failing" : $0.name } ?? "census"
        page.line("<article class=\"type status-\(statusName)\" id=\"\(type.anchor)\">")
        page.line("<h3><span class=\"status\">\(html(statusLabel(type.status)))</span> \(html(type.name))</h3>")
        var facts: [String] = []
        if let budget = type.budget { facts.append("max \(budget)") }
        facts.append("peak \(type.peak)" + (type.peakTime.map { " at \(Self.duration($0))" } ?? ""))
        facts.append("\(type.liveAtExit) alive at exit")
        if let allocated = type.allocated { facts.append("\(allocated) allocated") }
        page.line("<p class=\"facts\">\(html(facts.joined(separator: " · ")))</p>")
        if let timeline = type.timeline, !timeline.samples.isEmpty {
            timelineChart(type, timeline: timeline, report: report, into: &page)
        } else {
            page.line("<p class=\"no-timeline\">No timeline was recorded for this type.</p>")
        }
        let views = [("peak", "alive at the peak", type.atPeak), ("exit", "alive at exit", type.atExit)].filter {
            !$0.2.isEmpty
        }
        if !views.isEmpty {
            page.line("<div class=\"flame-block\">")
            page.line("<h4>Where they were allocated</h4>")
            page.line("<div class=\"flame-views\" role=\"group\">")
            for (position, view) in views.enumerated() {
                let count = view.2.reduce(0) { $0 + $1.count }
                page.line(
                    "<button type=\"button\" data-view=\"\(view.0)\"\(position == 0 ? " class=\"selected\"" : "")>\(count) \(html(view.1))</button>"
                )
            }
            page.line("</div>")
            for (position, view) in views.enumerated() {
                flameGraph(view.2, view: view.0, hidden: position > 0, into: &page)
            }
            page.line("<p class=\"frame-detail\">Hover over a frame to see it; click to zoom in, click the root to zoom out.</p>")
            page.line("</div>")
        }
        if let retainers = type.retainers, !retainers.isEmpty { retainerGraphs(retainers, into: &page) }
        page.line("</article>")
    }

    /// The most types that get a chart and a flame graph each.
    static let chartedTypeLimit = 50

    /// One row for each type over budget past the charted ones.
    private func unchartedTable(_ types: [ChartedType], into page: inout HTMLPage) {
        page.line("<h3 id=\"more-types\">\(types.count) more over budget, without charts</h3>")
        page.line("<table class=\"sortable\"><thead><tr>")
        page.line(
            "<th>Type</th><th data-numeric>Max</th><th data-numeric>Peak</th><th data-numeric>Alive at exit</th><th>Status</th>")
        page.line("</tr></thead><tbody>")
        for type in types {
            page.line(
                "<tr><td>\(html(type.name, longest: Self.longestInRow))</td><td>\(type.budget.map(String.init) ?? "")</td><td>\(type.peak)</td><td>\(type.liveAtExit)</td><td>\(html(statusLabel(type.status)))</td></tr>"
            )
        }
        page.line("</tbody></table>")
    }

    private func statusLabel(_ status: FindingStatus?) -> String {
        switch status {
        case nil: "census"
        case .failing?: "over budget"
        case .largerThanBaseline(let recorded)?: "over budget, baseline \(recorded)"
        case .suppressed?: "suppressed"
        case .baselined(let recorded)?: "baselined (\(recorded))"
        }
    }

    // MARK: - Timeline chart

    private static let chartWidth = 760.0
    private static let chartHeight = 220.0
    private static let plotLeft = 48.0
    private static let plotRight = 12.0
    private static let plotTop = 12.0
    private static let plotBottom = 28.0

    /// The most samples one chart draws: a plot about 700 pixels wide shows no more. A longer
    /// timeline is drawn in wider buckets, each with its lowest, highest and last count, so that
    /// every peak stays exact.
    static let chartSampleLimit = 1_000

    /// The narrowest a test's band is drawn, in the chart's units (about pixels): tests shorter
    /// than that on the chart are drawn as one band for the run of them, and each test that left
    /// instances alive keeps a band of its own, drawn over them.
    static let narrowestTestBand = 4.0

    private func timelineChart(_ type: ChartedType, timeline: LiveCountTimeline, report: AuditReport, into page: inout HTMLPage) {
        let tests = (report.tests ?? []).filter { $0.startedAt != nil && $0.finishedAt != nil }
        let lastSample = (timeline.samples.last?.time ?? 0) + timeline.bucketMilliseconds
        let end = Swift.max(
            1, report.target.durationMilliseconds ?? 0, lastSample, type.peakTime ?? 0, tests.compactMap(\.finishedAt).max() ?? 0)
        let shown = Self.downsampled(timeline, end: end)
        let samples = shown.samples
        let top = Swift.max(1, type.peak, type.budget ?? 0, samples.map(\.high).max() ?? 0)
        let yTop = Double(Self.niceCeiling(top))
        let plotWidth = Self.chartWidth - Self.plotLeft - Self.plotRight
        let plotHeight = Self.chartHeight - Self.plotTop - Self.plotBottom
        func x(_ time: Int) -> Double { Self.plotLeft + Double(time) / Double(end) * plotWidth }
        func y(_ count: Int) -> Double { Self.plotTop + plotHeight - Double(count) / yTop * plotHeight }

        page.line(
            "<svg class=\"timeline\" viewBox=\"0 0 \(Self.format(Self.chartWidth)) \(Self.format(Self.chartHeight))\" role=\"img\" aria-label=\"\(html("instances of \(type.name) alive over time"))\" data-end-ms=\"\(end)\" data-bucket-ms=\"\(shown.bucketMilliseconds)\">"
        )
        // Test boundaries, shaded and named.
        for band in Self.testBands(tests, x: x, plotEnd: Self.plotLeft + plotWidth) {
            let first = band.tests[0]
            let last = band.tests[band.tests.count - 1]
            guard let started = first.startedAt, let finished = last.finishedAt else { continue }
            let name = band.tests.count == 1 ? first.name : "\(band.tests.count) tests, \(first.name) to \(last.name)"
            let classes =
                "test-band band-\(band.parity)" + (band.tests.count > 1 ? " grouped" : "") + (band.leaked ? " leaked" : "")
            page.line(
                "<rect class=\"\(classes)\" x=\"\(Self.format(band.left))\" y=\"\(Self.format(Self.plotTop))\" width=\"\(Self.format(band.width))\" height=\"\(Self.format(plotHeight))\" data-test=\"\(html(first.name))\"\(band.tests.count > 1 ? " data-tests=\"\(band.tests.count)\"" : "")><title>\(html(name)): \(html("\(Self.duration(started))–\(Self.duration(finished))"))</title></rect>"
            )
            if band.width > 60 && band.tests.count == 1 {
                page.line(
                    "<text class=\"test-name\" x=\"\(Self.format(band.left + 3))\" y=\"\(Self.format(Self.plotTop + 11))\">\(html(Self.clipped(first.name, to: Int(band.width / 6.5))))</text>"
                )
            }
        }
        // Axes and grid.
        for tick in Self.ticks(upTo: Int(yTop)) {
            page.line(
                "<line class=\"grid\" x1=\"\(Self.format(Self.plotLeft))\" x2=\"\(Self.format(Self.plotLeft + plotWidth))\" y1=\"\(Self.format(y(tick)))\" y2=\"\(Self.format(y(tick)))\"/>"
            )
            page.line(
                "<text class=\"axis y\" x=\"\(Self.format(Self.plotLeft - 6))\" y=\"\(Self.format(y(tick) + 4))\">\(tick)</text>")
        }
        for tick in Self.ticks(upTo: end) {
            page.line(
                "<text class=\"axis x\" x=\"\(Self.format(x(tick)))\" y=\"\(Self.format(Self.chartHeight - 8))\">\(html(Self.duration(tick)))</text>"
            )
        }
        // Each bucket's range (lowest to highest count) as a band, then the count as a step line.
        var range = ""
        var line = "\(Self.format(x(0))),\(Self.format(y(0)))"
        var carried = 0
        for sample in samples {
            let left = x(sample.time)
            let right = x(Swift.min(sample.time + shown.bucketMilliseconds, end))
            range +=
                "M\(Self.format(left)) \(Self.format(y(sample.high)))H\(Self.format(Swift.max(right, left + 0.5)))V\(Self.format(y(sample.low)))H\(Self.format(left))Z"
            // Up to the bucket's highest count and back to its last: a spike, not a slope.
            line += " \(Self.format(left)),\(Self.format(y(carried))) \(Self.format(left)),\(Self.format(y(sample.high)))"
            line += " \(Self.format(left)),\(Self.format(y(sample.last)))"
            carried = sample.last
        }
        line += " \(Self.format(x(end))),\(Self.format(y(carried)))"
        page.line("<path class=\"range\" d=\"\(range)\"/>")
        page.line("<polyline class=\"live\" points=\"\(line)\"/>")
        for sample in samples {
            page.line(
                "<circle class=\"sample\" cx=\"\(Self.format(x(sample.time)))\" cy=\"\(Self.format(y(sample.high)))\" r=\"2\" data-time-ms=\"\(sample.time)\" data-low=\"\(sample.low)\" data-high=\"\(sample.high)\" data-last=\"\(sample.last)\"><title>\(Self.duration(sample.time)): \(sample.low == sample.high ? "\(sample.high)" : "\(sample.low)–\(sample.high)") alive, \(sample.last) at the end of the bucket</title></circle>"
            )
        }
        if let budget = type.budget {
            page.line(
                "<line class=\"budget\" x1=\"\(Self.format(Self.plotLeft))\" x2=\"\(Self.format(Self.plotLeft + plotWidth))\" y1=\"\(Self.format(y(budget)))\" y2=\"\(Self.format(y(budget)))\" data-max=\"\(budget)\"><title>max \(budget)</title></line>"
            )
            page.line(
                "<text class=\"budget-label\" x=\"\(Self.format(Self.plotLeft + plotWidth - 4))\" y=\"\(Self.format(y(budget) - 4))\">max \(budget)</text>"
            )
        }
        if let peakTime = type.peakTime {
            page.line(
                "<circle class=\"peak\" cx=\"\(Self.format(x(peakTime)))\" cy=\"\(Self.format(y(type.peak)))\" r=\"4.5\" data-peak=\"\(type.peak)\" data-time-ms=\"\(peakTime)\"><title>peak \(type.peak) at \(html(Self.duration(peakTime)))</title></circle>"
            )
            // Beside the marker, on the side with room.
            let atRight = x(peakTime) > Self.plotLeft + plotWidth * 0.85
            page.line(
                "<text class=\"peak-label\" x=\"\(Self.format(x(peakTime) + (atRight ? -7 : 7)))\" y=\"\(Self.format(y(type.peak) + 4))\"\(atRight ? " text-anchor=\"end\"" : "")>peak \(type.peak)</text>"
            )
        }
        page.line("</svg>")
    }

    /// `timeline` in buckets wide enough that at most `chartSampleLimit` of them span `end`
    /// milliseconds (a multiple of its bucket width); itself when it already has no more.
    static func downsampled(_ timeline: LiveCountTimeline, end: Int) -> LiveCountTimeline {
        guard timeline.samples.count > chartSampleLimit, timeline.bucketMilliseconds > 0 else { return timeline }
        let buckets = end / timeline.bucketMilliseconds + 1
        let factor = (buckets + chartSampleLimit - 1) / chartSampleLimit
        return timeline.rebucketed(to: timeline.bucketMilliseconds * Swift.max(factor, 1))
    }

    /// One shaded band of the chart: a test, or a run of consecutive tests too short to draw apart.
    struct TestBand {
        var tests: [AuditReport.TestReport]
        var left: Double
        var width: Double
        var leaked: Bool
        var parity: Int
    }

    /// The bands for `tests` (each with a start and a finish): a test at least `narrowestTestBand`
    /// wide is its own band; a narrower one is widened to that and, when the plot cannot hold every
    /// test at that width, joined with the tests that start within that width after it (a band is
    /// never narrower). Where tests were joined, each test that left something alive also gets a
    /// band of its own, at least that wide, after the others so that it is drawn on top and a
    /// pointer finds it.
    static func testBands(_ tests: [AuditReport.TestReport], x: (Int) -> Double, plotEnd: Double) -> [TestBand] {
        var bands: [TestBand] = []
        var pending: [AuditReport.TestReport] = []
        var pendingLeft = 0.0
        var pendingRight = 0.0
        func flush() {
            guard !pending.isEmpty else { return }
            // At least as wide as a pointer needs, and within the plot.
            let width = Swift.max(pendingRight - pendingLeft, narrowestTestBand)
            let left = Swift.max(Swift.min(pendingLeft, plotEnd - width), x(0))
            bands.append(TestBand(tests: pending, left: left, width: width, leaked: false, parity: bands.count % 2))
            pending = []
        }
        // Joined only when the plot cannot hold every test at the narrowest width.
        let crowded = Double(tests.count) * narrowestTestBand > plotEnd - x(0)
        for test in tests {
            guard let started = test.startedAt, let finished = test.finishedAt else { continue }
            let left = x(started)
            let right = x(Swift.max(finished, started))
            let wide = !crowded || right - left >= narrowestTestBand
            // A test wide enough is never joined, nor one that starts with room for what is pending.
            if wide || left >= pendingLeft + narrowestTestBand { flush() }
            if pending.isEmpty {
                pendingLeft = left
                pendingRight = right
            }
            pending.append(test)
            pendingRight = Swift.max(pendingRight, right)
            if wide { flush() }
        }
        flush()
        let leaking = tests.filter { !($0.leaked.isEmpty && $0.globalState.isEmpty && $0.keptByTestCase.isEmpty) }
        // Only where tests were joined: otherwise each has its band already.
        guard bands.contains(where: { $0.tests.count > 1 }) else { return bands }
        for test in leaking {
            guard let started = test.startedAt, let finished = test.finishedAt else { continue }
            let width = Swift.max(x(Swift.max(finished, started)) - x(started), narrowestTestBand)
            bands.append(TestBand(tests: [test], left: x(started), width: width, leaked: true, parity: bands.count % 2))
        }
        return bands
    }

    /// 1, 2 or 5 times a power of ten, at least `value`.
    static func niceCeiling(_ value: Int) -> Int {
        var scale = 1
        while true {
            for step in [1, 2, 5] where step * scale >= value { return step * scale }
            scale *= 10
        }
    }

    /// About six round values from 0 to `limit`.
    static func ticks(upTo limit: Int) -> [Int] {
        guard limit > 0 else { return [0] }
        let step = Swift.max(1, niceCeiling(Swift.max(1, limit / 6)))
        return Array(stride(from: 0, through: limit, by: step))
    }

    /// `350 ms`, `1.2 s`, `2 min 5 s`.
    static func duration(_ milliseconds: Int) -> String {
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        if milliseconds < 60_000 {
            let tenths = (milliseconds + 50) / 100
            return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
        }
        let seconds = (milliseconds + 500) / 1000
        return "\(seconds / 60) min \(seconds % 60) s"
    }

    /// A coordinate with at most one decimal.
    static func format(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }

    private static func clipped(_ text: String, to length: Int) -> String {
        guard text.count > length, length > 1 else { return text }
        return String(text.prefix(length - 1)) + "…"
    }

    // MARK: - Flame graph

    /// The icicle's boxes, in one array: a box is a frame and the instances whose stacks pass
    /// through it from the root down. Children are indices, not references, so that neither building,
    /// walking nor releasing the tree recurses, however deep a stack from the target is.
    private struct FlameTree {
        struct Node {
            var frame: SymbolizedFrame?
            var count = 0
            var depth: Int
            var children: [Int] = []
        }

        /// What makes two frames one box under the same parent: the same function at the same line.
        private struct ChildKey: Hashable {
            var parent: Int
            var function: String?
            var file: String?
            var line: Int?
            var module: String?
        }

        private(set) var nodes = [Node(frame: nil, depth: 0)]
        private var index: [ChildKey: Int] = [:]
        /// Frames below `maxDepth` that were not added.
        private(set) var deeperFrames = 0

        /// Adds `count` instances allocated by `frames` (innermost first), at most `maxDepth` levels
        /// below the root.
        mutating func add(_ frames: [SymbolizedFrame], count: Int, maxDepth: Int) {
            nodes[0].count += count
            var node = 0
            // Outermost first: the program's entry at the top, the allocating line at the bottom.
            for (level, frame) in frames.reversed().enumerated() {
                guard level < maxDepth else {
                    deeperFrames += frames.count - level
                    break
                }
                let key = ChildKey(
                    parent: node, function: frame.function, file: frame.file, line: frame.line, module: frame.module)
                if let child = index[key] {
                    node = child
                } else {
                    let child = nodes.count
                    nodes.append(Node(frame: frame, depth: level + 1))
                    nodes[node].children.append(child)
                    index[key] = child
                    node = child
                }
                nodes[node].count += count
            }
        }
    }

    /// Boxes narrower than this share of the whole are not drawn.
    private static let narrowestShare = 0.0005
    /// The most boxes one flame graph draws (the widest), and the most levels below its root: a
    /// stack deeper than a person reads is cut, and the graph says how much.
    static let flameBoxLimit = 4_000
    static let flameDepthLimit = 256

    private func flameGraph(
        _ groups: [AuditReport.AllocationGroup], view: String, hidden: Bool, into page: inout HTMLPage
    ) {
        var tree = FlameTree()
        for group in groups { tree.add(group.frames, count: group.count, maxDepth: Self.flameDepthLimit) }
        let nodes = tree.nodes
        let total = Swift.max(nodes[0].count, 1)
        // The widest boxes, a parent before its children (a child is never wider than its parent).
        let drawable = nodes.indices.filter { $0 == 0 || Double(nodes[$0].count) / Double(total) >= Self.narrowestShare }
        var drawn = Set(
            drawable.sorted { (nodes[$0].count, -nodes[$0].depth) > (nodes[$1].count, -nodes[$1].depth) }
                .prefix(Self.flameBoxLimit))
        drawn.insert(0)
        let depth = 1 + (drawn.map { nodes[$0].depth }.max() ?? 0)
        page.line(
            "<div class=\"flame\" data-view=\"\(view)\" data-total=\"\(nodes[0].count)\"\(hidden ? " hidden" : "") style=\"height:\(depth * 20)px\">"
        )
        var left: [(node: Int, x: Double)] = [(0, 0)]
        let skipped = nodes.count - drawn.count
        while let (node, x) = left.popLast() {
            guard drawn.contains(node) else { continue }
            let share = Double(nodes[node].count) / Double(total)
            flameBox(nodes[node], x: x, share: share, into: &page)
            var childX = x
            for child in nodes[node].children.sorted(by: { nodes[$0].count > nodes[$1].count }) {
                left.append((child, childX))
                childX += Double(nodes[child].count) / Double(total)
            }
        }
        page.line("</div>")
        if skipped > 0 {
            page.line("<p class=\"flame-note\">\(skipped) frames too narrow to draw are left out.</p>")
        }
        if tree.deeperFrames > 0 {
            page.line(
                "<p class=\"flame-note deep\">Stacks deeper than \(Self.flameDepthLimit) frames are cut there: \(tree.deeperFrames) deeper frames are left out; the JSON report has them.</p>"
            )
        }
    }

    private func flameBox(_ node: FlameTree.Node, x: Double, share: Double, into page: inout HTMLPage) {
        let label: String
        let detail: String
        let kind: String
        // The type's name is the section's, once: not repeated in every box.
        let instances = "\(node.count) instance\(node.count == 1 ? "" : "s")"
        if let frame = node.frame {
            let text = flameBoxText(frame, into: &page)
            label = text.label
            // Escaping works character by character, so the frame's escaped description followed
            // by the count (nothing in it to escape) is the escaped detail, unless the detail is
            // long enough to be cut.
            let suffix = " — \(instances)"
            detail =
                text.description.utf8.count + suffix.utf8.count <= Self.longestText
                ? text.escapedDescription + suffix : html("\(text.description)\(suffix)")
            kind = text.kind
        } else {
            label = html("all \(node.count)")
            detail = html("all \(instances)")
            kind = "root"
        }
        let percent = { (value: Double) in String((value * 100_000).rounded() / 1000) }
        page.line(
            "<div class=\"frame \(kind)\" style=\"left:\(percent(x))%;width:\(percent(share))%;top:\(node.depth * 20)px\" data-x=\"\(x)\" data-w=\"\(share)\" data-depth=\"\(node.depth)\" data-count=\"\(node.count)\" title=\"\(detail)\">\(label)</div>"
        )
    }

    /// What a flame box shows of its frame, made once for each distinct frame of the page: a
    /// frame recurs in many boxes (under other callers, in each test's graph), and its name's
    /// readable form, short form and escaping each cost a pass over a long Swift name.
    private func flameBoxText(_ frame: SymbolizedFrame, into page: inout HTMLPage) -> HTMLPage.FlameBoxText {
        if let known = page.flameBoxTexts[frame] { return known }
        let function = frame.function.map { ReadableStack.readableFunction($0) } ?? "??"
        let description = phrases.describe(frame)
        let text = HTMLPage.FlameBoxText(
            label: html(ReportPhrases.shortTypeName(function)), description: description,
            escapedDescription: html(description), kind: Self.frameKind(frame))
        page.flameBoxTexts[frame] = text
        return text
    }

    /// `user` for the program's own code (a frame with a source line outside the system's
    /// libraries), `runtime` for the Swift runtime, the C library and the toolchain's libraries,
    /// `library` for the rest.
    static func frameKind(_ frame: SymbolizedFrame) -> String {
        let module = frame.module ?? ""
        let system =
            module.isEmpty || module.hasPrefix("/lib/") || module.hasPrefix("/lib64/") || module.hasPrefix("/usr/lib/")
            || module.includes("/lib/swift/")
        if system { return "runtime" }
        return frame.hasSourceLine ? "user" : "library"
    }

    // MARK: - Who holds them

    private func retainerGraphs(_ retainers: [Retainer], heading: String? = "Who holds them", into page: inout HTMLPage) {
        page.line("<div class=\"retainers\">" + (heading.map { "<h4>\(html($0))</h4>" } ?? ""))
        for retainer in retainers {
            page.line(
                "<figure class=\"retainer\" data-count=\"\(retainer.count)\"><figcaption>\(retainer.count) held, \(html(ReportPhrases.byteCount(retainer.retainedBytes))) retained</figcaption><ol class=\"path\">"
            )
            page.line(
                "<li class=\"root kind-\(retainer.root.kind.rawValue)\">\(html(ReportPhrases.retainerRoot(retainer.root)))</li>")
            for step in retainer.path {
                page.line(
                    "<li class=\"step\"><span class=\"via\">\(html(ReportPhrases.escaped(step.via)))</span> <span class=\"object\">\(html(ReportPhrases.escaped(ReportPhrases.shortTypeName(step.type))))</span></li>"
                )
            }
            if retainer.root.kind == .cycle, let first = retainer.path.first {
                // A cycle closes on its first object.
                page.line(
                    "<li class=\"step back\"><span class=\"via\">back to</span> <span class=\"object\">\(html(ReportPhrases.escaped(ReportPhrases.shortTypeName(first.type))))</span></li>"
                )
            }
            page.line("</ol></figure>")
        }
        page.line("</div>")
    }

    // MARK: - Tests and census

    private func testTable(
        _ tests: [AuditReport.TestReport], report: AuditReport, charted: [ChartedType], into page: inout HTMLPage
    ) {
        page.line("<section id=\"tests\"><h2>Tests</h2>")
        page.line("<table class=\"sortable\"><thead><tr>")
        page.line(
            "<th>Test</th><th data-numeric>Started</th><th data-numeric>Duration</th><th>Left alive</th><th data-numeric>Instances</th><th>Status</th>"
        )
        page.line("</tr></thead><tbody>")
        // Tests that left nothing are listed once below the table, so that 1,500 tests stay readable.
        let clean = tests.filter { $0.leaked.isEmpty && $0.globalState.isEmpty && $0.keptByTestCase.isEmpty }
        let cleanNames = Set(clean.map(\.name))
        for test in tests where !cleanNames.contains(test.name) {
            let leaked = test.leaked + test.globalState + test.keptByTestCase
            let failing = test.leaked.contains { $0.status.fails }
            let status = failing ? "leaked" : leaked.isEmpty ? "clean" : "not failing"
            let started = test.startedAt.map { "\($0)" } ?? ""
            let duration = test.startedAt.flatMap { start in test.finishedAt.map { $0 - start } }
            let types = leaked.map { leakedType in
                let anchor = charted.first { $0.name == leakedType.type && $0.status != nil }?.anchor
                let name = html(leakedType.type)
                let text = anchor.map { "<a href=\"#\($0)\">\(name)</a>" } ?? name
                let stacks = leakedType.allocations.prefix(3).compactMap { group in
                    phrases.readableFrames(group.frames).first.map { html(phrases.describe($0)) }
                }
                let global =
                    !test.globalState.contains(leakedType)
                    ? (test.keptByTestCase.contains(leakedType) ? " (kept by the test case)" : "")
                    : leakedType.globalStateReason == .releasedLater
                        ? " (released later\(leakedType.releasedAfterMilliseconds.map { ", \($0) ms after the test finished" } ?? ""))"
                        : " (global state)"
                let held = (leakedType.retainers ?? []).prefix(3).map { retainer in
                    "<li class=\"held\">held by \(html(ReportPhrases.retainerRoot(retainer.root))): \(html(ReportPhrases.retainerChain(retainer)))</li>"
                }
                return
                    "<details\(test.leaked.contains(leakedType) && leakedType.status.fails ? " open" : "")><summary>\(text) ×\(leakedType.count)\(global)</summary><ul>"
                    + stacks.map { "<li>\($0)</li>" }.joined() + held.joined() + "</ul></details>"
            }.joined()
            page.line(
                "<tr class=\"test-row status-\(status.replacingSpaces)\" data-test=\"\(html(test.name))\"><td>\(breakable(html(test.name)))</td><td data-sort=\"\(test.startedAt ?? -1)\">\(started.isEmpty ? "" : html(Self.duration(test.startedAt ?? 0)))</td><td data-sort=\"\(duration ?? -1)\">\(duration.map { html(Self.duration($0)) } ?? "")</td><td>\(types)</td><td>\(leaked.reduce(0) { $0 + $1.count })</td><td>\(html(status))</td></tr>"
            )
        }
        page.line("</tbody></table>")
        if !clean.isEmpty {
            page.line(
                "<details class=\"clean-tests\"><summary>\(clean.count) test\(clean.count == 1 ? "" : "s") left nothing alive</summary><p>"
            )
            page.line(clean.map { html($0.name) }.joined(separator: ", "))
            page.line("</p></details>")
        }
        page.line("</section>")
    }

    private func censusTable(
        _ census: AuditReport.Census, inspected: Bool, charted: [ChartedType], into page: inout HTMLPage
    ) {
        let moment = inspected ? "when inspected" : "at exit"
        // A heap walk's census (`leak-audit inspect`) has bytes too.
        let withBytes = !census.entries.isEmpty && census.entries.allSatisfy { $0.bytes != nil }
        page.line("<section id=\"census\"><h2>Census: alive \(moment)</h2>")
        page.line(
            "<table class=\"sortable\"><thead><tr><th>Type</th><th data-numeric>Alive \(moment)</th>"
                + (withBytes ? "<th data-numeric>Bytes</th>" : "") + "</tr></thead><tbody>")
        for (index, entry) in census.entries.enumerated() {
            let anchor = "census-\(index)"
            let name =
                charted.contains { $0.anchor == anchor }
                ? "<a href=\"#\(anchor)\">\(html(entry.name, longest: Self.longestInRow))</a>"
                : html(entry.name, longest: Self.longestInRow)
            let bytes = withBytes ? "<td>\(entry.bytes ?? 0)</td>" : ""
            page.line("<tr><td>\(name)</td><td>\(entry.liveAtExit)</td>\(bytes)</tr>")
        }
        page.line("</tbody></table>")
        if census.foldedTypes > 0 {
            page.line(
                "<p>\(census.foldedTypes) types of the runtime and toolchain libraries (\(census.foldedInstances) instances) are not listed.</p>"
            )
        }
        page.line("</section>")
    }

    // MARK: - Escaping

    /// `text` safe inside an element or a quoted attribute: control and bidirectional characters
    /// made visible (ReportPhrases.escaped), then markup characters as entities.
    /// Text longer than `longestText` characters (a name a target chose) is cut there, and says
    /// how much was cut: the page stays readable and its size bounded whatever the name's length.
    private func html(_ text: String, longest: Int = longestText) -> String {
        var shown = text
        var cut = 0
        if text.utf8.count > longest {
            let scalars = text.unicodeScalars
            let end =
                scalars.index(scalars.startIndex, offsetBy: longest, limitedBy: scalars.endIndex) ?? scalars.endIndex
            cut = scalars[end...].count
            shown = String(scalars[..<end])
        }
        // Byte by byte: the characters HTML reads as markup are ASCII, and any other byte is
        // copied as it is. Most texts have none of them, and are kept whole.
        let escapedText = ReportPhrases.escaped(shown)
        let escaped = escapedText.utf8
        let hasMarkup =
            escaped.withContiguousStorageIfAvailable { $0.contains(where: Self.isMarkup) }
            ?? escaped.contains(where: Self.isMarkup)
        guard hasMarkup else { return cut > 0 ? escapedText + Self.cutNote(cut) : escapedText }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(escaped.count)
        for byte in escaped {
            switch byte {
            case UInt8(ascii: "&"): bytes += "&amp;".utf8
            case UInt8(ascii: "<"): bytes += "&lt;".utf8
            case UInt8(ascii: ">"): bytes += "&gt;".utf8
            case UInt8(ascii: "\""): bytes += "&quot;".utf8
            case UInt8(ascii: "'"): bytes += "&#39;".utf8
            default: bytes.append(byte)
            }
        }
        var result = String(decoding: bytes, as: UTF8.self)
        if cut > 0 { result += Self.cutNote(cut) }
        return result
    }

    /// True for the bytes `html` writes as entities.
    private static func isMarkup(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "\"")
            || byte == UInt8(ascii: "'")
    }

    /// What follows a text cut at `longest`: how many characters were left out.
    private static func cutNote(_ cut: Int) -> String {
        "… (\(cut) more characters; the JSON report has them all)"
    }

    /// The most characters of one text the page shows, and of a name in a row of a long table.
    static let longestText = 1_000
    static let longestInRow = 160

    /// Escaped `text` that may wrap after each `.` and `/` (a test's or a type's name has no spaces).
    private func breakable(_ escaped: String) -> String {
        var result = ""
        for character in escaped {
            result.append(character)
            if character == "/" || character == "." { result += "<wbr>" }
        }
        return result
    }

    // MARK: - Style and script

    private static let style = """
        :root{--fail:#c62828;--ok:#2e7d32;--warn:#ef6c00;--muted:#666;--user:#f4a259;--library:#8ab4f8;--runtime:#c7c7c7}
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1000px;padding:16px 24px;color:#222}
        h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
        h3{font-size:15px;margin:18px 0 4px;overflow-wrap:anywhere}h4{font-size:13px;margin:12px 0 4px;color:#444}
        header{border-left:6px solid var(--muted);padding:8px 14px;background:#fafafa}
        header.verdict-clean{border-color:var(--ok)}header.verdict-budgetExceeded,header.verdict-testsLeaked{border-color:var(--fail)}
        header.verdict-incomplete,header.verdict-targetFailed,header.verdict-notAudited{border-color:var(--warn)}
        .verdict{text-transform:uppercase;font-weight:700}.verdict-clean .verdict{color:var(--ok)}
        .verdict-budgetExceeded .verdict,.verdict-testsLeaked .verdict{color:var(--fail)}.sentence{margin:4px 0 8px}
        dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dt{color:var(--muted)}dd{margin:0}
        .status{font-size:12px;padding:1px 6px;border-radius:3px;background:#eee;margin-right:6px;word-break:normal}
        .status-failing .status{background:var(--fail);color:#fff}.facts{color:#444;margin:2px 0 6px}
        svg.timeline{width:100%;height:auto;background:#fff;border:1px solid #e4e4e4}
        .grid{stroke:#eee}.axis{font-size:10px;fill:var(--muted)}.axis.y{text-anchor:end}.axis.x{text-anchor:middle}
        .range{fill:#1565c0;opacity:.18}.live{fill:none;stroke:#1565c0;stroke-width:1.5}.sample{fill:#1565c0}
        .budget{stroke:var(--fail);stroke-dasharray:5 4;stroke-width:1.5}.budget-label{font-size:11px;fill:var(--fail);text-anchor:end}
        .peak{fill:none;stroke:var(--fail);stroke-width:2}.peak-label{font-size:11px;fill:var(--fail)}
        .test-band.band-0{fill:#f1f8e9}.test-band.band-1{fill:#e8f5e9}.test-band.grouped{fill:#dcedc8}
        .test-band.leaked{fill:#ffcdd2}.test-name{font-size:10px;fill:#558b2f}
        .flame-views button{font:inherit;font-size:12px;border:1px solid #bbb;background:#f6f6f6;padding:2px 8px;cursor:pointer}
        .flame-views button.selected{background:#333;color:#fff;border-color:#333}
        .flame{position:relative;margin-top:6px;overflow:hidden}
        .frame{position:absolute;height:19px;box-sizing:border-box;border:1px solid #fff;font-size:11px;line-height:17px;
        padding:0 3px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;cursor:pointer}
        .frame.root{background:#9e9e9e;color:#fff}.frame.user{background:var(--user)}.frame.library{background:var(--library)}
        .frame.runtime{background:var(--runtime);color:#333}.frame:hover{filter:brightness(.9)}
        .frame-detail{font:12px ui-monospace,monospace;color:#444;min-height:1.4em;word-break:break-all}
        .flame-note{font-size:12px;color:var(--muted)}
        table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;vertical-align:top}
        th{cursor:pointer;user-select:none;background:#fafafa}th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
        td{overflow-wrap:break-word}#tests td:first-child{width:38%}#tests td:last-child{white-space:nowrap}tr.status-leaked td:last-child{color:var(--fail);font-weight:600}
        details ul{margin:2px 0 4px 16px;padding:0;font:12px ui-monospace,monospace}li.held{color:#6d4c41}
        .clean-tests p{font-size:12px;color:var(--muted)}
        ol.path{list-style:none;display:flex;flex-wrap:wrap;gap:4px;padding:0;margin:4px 0}
        ol.path li{border:1px solid #bbb;border-radius:4px;padding:2px 6px;font-size:12px}
        ol.path li+li::before{content:"→ ";color:var(--muted)}ol.path li.root{background:#fff3e0}
        ol.path li.back{border-style:dashed}.via{color:var(--muted)}.retainer figcaption{font-size:12px;color:#444}
        .retainer{margin:6px 0}footer{margin-top:28px;color:var(--muted);font-size:12px}
        """

    private static let script = """
        (function () {
          "use strict";
          // Flame graphs: a click zooms into a frame (its callers stay as full-width bars above it),
          // a click on the root zooms out; hovering shows the frame below the graph.
          document.querySelectorAll(".flame-block").forEach(function (block) {
            var detail = block.querySelector(".frame-detail");
            block.querySelectorAll(".flame").forEach(function (graph) {
              var frames = Array.prototype.slice.call(graph.querySelectorAll(".frame"));
              function zoom(node) {
                var x = +node.dataset.x, w = +node.dataset.w, depth = +node.dataset.depth, e = 1e-9;
                frames.forEach(function (frame) {
                  var fx = +frame.dataset.x, fw = +frame.dataset.w, fd = +frame.dataset.depth;
                  var visible = fd < depth ? fx <= x + e && fx + fw >= x + w - e : fx >= x - e && fx + fw <= x + w + e;
                  frame.hidden = !visible;
                  if (!visible) return;
                  frame.style.left = fd < depth ? "0%" : ((fx - x) / w) * 100 + "%";
                  frame.style.width = fd < depth ? "100%" : (fw / w) * 100 + "%";
                });
                graph.dataset.zoom = node.dataset.depth === "0" ? "" : node.textContent;
              }
              graph.addEventListener("click", function (event) {
                var frame = event.target.closest(".frame");
                if (frame) zoom(frame);
              });
              graph.addEventListener("mouseover", function (event) {
                var frame = event.target.closest(".frame");
                if (frame && detail) detail.textContent = frame.title;
              });
            });
            // Instances alive at the peak, or at exit.
            block.querySelectorAll(".flame-views button").forEach(function (button) {
              button.addEventListener("click", function () {
                block.querySelectorAll(".flame-views button").forEach(function (other) {
                  other.classList.toggle("selected", other === button);
                });
                block.querySelectorAll(".flame").forEach(function (graph) {
                  graph.hidden = graph.dataset.view !== button.dataset.view;
                });
              });
            });
          });
          // Tables sort by the clicked column; again to reverse.
          document.querySelectorAll("table.sortable").forEach(function (table) {
            var headers = table.querySelectorAll("th");
            headers.forEach(function (header, column) {
              header.addEventListener("click", function () {
                var ascending = header.getAttribute("aria-sort") !== "ascending";
                headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
                header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
                var numeric = header.hasAttribute("data-numeric");
                var body = table.tBodies[0];
                var rows = Array.prototype.slice.call(body.rows);
                function key(row) {
                  var cell = row.cells[column];
                  var value = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
                  return numeric ? parseFloat(value) || 0 : value.toLowerCase();
                }
                rows.sort(function (a, b) {
                  var left = key(a), right = key(b);
                  return (left < right ? -1 : left > right ? 1 : 0) * (ascending ? 1 : -1);
                });
                rows.forEach(function (row) { body.appendChild(row); });
              });
            });
          });
        })();
        """
}

/// The page under construction, a line at a time.
// MARK: - Unreachable objects

extension HTMLReportRenderer {
    /// Groups of unreachable objects drawn with their allocation lines.
    static let unreachableGroupLimit = 200

    /// The unreachable objects: each group of the program's types as its cycle (or lone object)
    /// with the lines that allocated it, the internal ones in one line, every type in a table.
    private func unreachableSection(_ unreachable: UnreachableObjects, into page: inout HTMLPage) {
        page.line("<section id=\"unreachable\"><h2>Unreachable objects</h2>")
        let findings = unreachable.groups.filter { !$0.isInternal }
        let processes = ReportPhrases.processesChecked(unreachable)
        page.line(
            "<p class=\"unreachable-total\">\(unreachable.objects) objects (\(html(ReportPhrases.byteCount(unreachable.bytes)))) that nothing reaches; \(html(processes)).</p>"
        )
        if findings.isEmpty && unreachable.processesChecked == 0 {
            page.line("<p class=\"unreachable-none\">Not checked.</p>")
        } else if findings.isEmpty {
            page.line("<p class=\"unreachable-none\">No object of the program's types is unreachable.</p>")
        }
        for (index, group) in findings.prefix(Self.unreachableGroupLimit).enumerated() {
            let status = group.status.fails ? "failing" : group.status.name
            page.line(
                "<article class=\"unreachable-group status-\(status) shape-\(group.shape.rawValue)\" id=\"unreachable-\(index)\" data-count=\"\(group.count)\" data-objects=\"\(group.objects)\" data-bytes=\"\(group.bytes)\">"
            )
            page.line(
                "<h3><span class=\"status\">\(html(unreachableStatusLabel(group.status)))</span> \(html(ReportPhrases.unreachableHeadline(group)))</h3>"
            )
            page.line("<ol class=\"path\">")
            for (position, step) in group.path.enumerated() {
                let closes = group.shape == .cycle && position == group.path.count - 1 && position > 0
                let via = step.via.isEmpty ? "" : "<span class=\"via\">\(html(step.via))</span> "
                page.line(
                    "<li class=\"step\(closes ? " back" : "")\">\(via)<span class=\"object\">\(html(ReportPhrases.shortTypeName(step.type)))</span></li>"
                )
            }
            page.line("</ol>")
            if let suppression = group.status.suppression {
                page.line("<p class=\"suppression\">Suppressed \(html(phrases.suppressionLine(suppression))).</p>")
            }
            if !group.allocations.isEmpty {
                page.line("<details open><summary>Where they were allocated</summary><ul>")
                for allocation in group.allocations.prefix(ReportPhrases.sitesShown) {
                    let frames = phrases.readableFrames(allocation.frames).prefix(ReportPhrases.sourceFramesShown)
                    let text = frames.map { html(phrases.describe($0)) }.joined(separator: "<br>")
                    page.line("<li>\(allocation.count) × \(text.isEmpty ? "(no stack recorded)" : text)</li>")
                }
                page.line("</ul></details>")
            }
            page.line("</article>")
        }
        if findings.count > Self.unreachableGroupLimit {
            page.line(
                "<p>\(findings.count - Self.unreachableGroupLimit) more groups are left out; the JSON report lists them all.</p>")
        }
        let folded = unreachable.groups.filter(\.isInternal)
        if !folded.isEmpty {
            let objects = folded.reduce(0) { $0 + $1.objects }
            let bytes = ReportPhrases.byteCount(folded.reduce(0) { $0 + $1.bytes })
            page.line(
                "<p class=\"folded\">\(folded.reduce(0) { $0 + $1.count }) structures of runtime and Foundation types (\(objects) objects, \(html(bytes))) are folded.</p>"
            )
        }
        for note in ReportPhrases.unreachableNotes(unreachable) { page.line("<p class=\"note\">\(html(note)).</p>") }
        if !unreachable.types.isEmpty {
            page.line("<table class=\"sortable\"><thead><tr>")
            page.line("<th>Type</th><th data-numeric>Objects</th><th data-numeric>Bytes</th><th>Kind</th>")
            page.line("</tr></thead><tbody>")
            for type in unreachable.types {
                page.line(
                    "<tr><td>\(html(type.name, longest: Self.longestInRow))</td><td>\(type.count)</td><td>\(type.bytes)</td><td>\(type.isInternal ? "runtime" : "program")</td></tr>"
                )
            }
            page.line("</tbody></table>")
        }
        page.line("</section>")
    }

    private func unreachableStatusLabel(_ status: FindingStatus) -> String {
        switch status {
        case .failing: "unreachable"
        case .largerThanBaseline(let recorded): "unreachable, baseline \(recorded)"
        case .suppressed: "suppressed"
        case .baselined(let recorded): "baselined (\(recorded))"
        }
    }

    /// The style of the unreachable section and verdict, on pages that have them.
    static let unreachableStyle = """
        header.verdict-unreachableObjects{border-color:var(--fail)}.verdict-unreachableObjects .verdict{color:var(--fail)}
        .unreachable-group .status{background:#eee}.unreachable-group.status-failing .status{background:var(--fail);color:#fff}
        .unreachable-group details ul{font:12px ui-monospace,monospace}.unreachable-group .suppression,.folded,.note{color:var(--muted)}
        """
}

private struct HTMLPage {
    var text = ""
    /// What a flame box shows of a frame: its label and its description, escaped, and its kind.
    struct FlameBoxText {
        var label: String
        var description: String
        var escapedDescription: String
        var kind: String
    }
    /// The flame boxes' texts so far, by frame (`HTMLReportRenderer.flameBoxText`).
    var flameBoxTexts: [SymbolizedFrame: FlameBoxText] = [:]

    mutating func line(_ line: String) {
        text += line
        text += "\n"
    }
}

extension String {
    /// The text with spaces as hyphens, for a class name.
    fileprivate var replacingSpaces: String { String(map { $0 == " " ? "-" : $0 }) }
}
