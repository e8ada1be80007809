import LeakAuditModel
import XCTest

@testable import LeakAuditCore

/// How the steps of a retaining path are named from the target's symbols.
final class RetainerNamingTests: XCTestCase {
    /// Symbols at fixed addresses: code at 0x1000 (a closure), an async function pointer at 0x2000,
    /// and a variable that is no closure's at 0x3000.
    private struct FixedSymbolizer: AddressSymbolizer {
        func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] {
            let function: String? =
                switch returnAddress {
                case 0x1001: "closure #1 in App.Screen.init() -> App.Screen"
                // A task's words: a closure of Swift Testing's runner (a task-local value it
                // copied), where it resumes in a thunk, then in its own closure.
                case 0x7001:
                    "partial apply forwarder for closure #1 @Sendable (Testing.Event, Testing.Event.Context) -> () in static Testing.Runner._run(Testing.Runner) async -> ()"
                case 0x7101:
                    "(1) await resume partial function for reabstraction thunk helper from @escaping @callee_guaranteed @async () -> (@out A) to @escaping @callee_guaranteed @async () -> (@out A)"
                case 0x7201:
                    "(1) await resume partial function for closure #1 () async -> () in App.Buffer.append(_: Swift.Int) -> ()"
                default: nil
                }
            return [SymbolizedFrame(address: returnAddress, function: function)]
        }
        func variable(at address: UInt64) -> String? {
            switch address {
            case 0x2000: "async function pointer to closure #2 in App.Screen.load() async -> ()"
            case 0x3000: "_swiftEmptyArrayStorage"
            default: nil
            }
        }
        func closureParameters(at address: UInt64) -> [(name: String, type: String?)] { [] }
        var problems: [String] { [] }
    }

    /// The type the path shows for a closure context whose function value's other word is `code`.
    private func contextName(code: UInt64) -> String? {
        let path = RetainerSearch.Path(
            root: .cycle,
            steps: [
                RetainerSearch.Step(hold: .property("onClose"), type: "closure context", closure: code),
                RetainerSearch.Step(hold: .capture, type: "App.Screen"),
            ])
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: [], walk: .searched([0x9000: path]))
        return naming.retainers(of: [0x9000], typeName: "App.Screen").retainers.first?.path.first?.type
    }

    /// The name of the root of a path from a task whose words hold the code addresses `functions`.
    private func taskName(_ functions: [UInt64]) -> String? {
        let path = RetainerSearch.Path(
            root: .task(functions: functions), steps: [RetainerSearch.Step(hold: .word, type: "App.Buffer")])
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: [], walk: .searched([0x9000: path]))
        return naming.retainers(of: [0x9000], typeName: "App.Buffer").retainers.first?.root.name
    }

    func testATaskIsNamedByWhereItResumesBeforeAClosureItHolds() {
        // FlyingFox's `canBeCancelled()`: a task a test made, waiting for ever, was named by the
        // runner's closure among the task-local values it copied.
        XCTAssertEqual(taskName([0x7000, 0x7100, 0x7200]), "closure #1 in App.Buffer.append(_:)")
        // With nowhere to resume named, the first closure.
        XCTAssertEqual(taskName([0x7100, 0x7000]), "closure #1 in static Testing.Runner._run(_:)")
        XCTAssertEqual(taskName([0x1000, 0x7000]), "closure #1 in App.Screen.init()")
    }

    func testAClosureContextIsNamedByItsCodeOrAsyncFunctionPointerAndNothingElse() {
        XCTAssertEqual(contextName(code: 0x1000), "context of closure #1 in App.Screen.init()")
        XCTAssertEqual(contextName(code: 0x2000), "context of closure #2 in App.Screen.load()")
        // The word beside the context was another constant (an empty array's storage), not its code.
        XCTAssertEqual(contextName(code: 0x3000), "closure context")
        XCTAssertEqual(contextName(code: 0x4000), "closure context")
    }
}
