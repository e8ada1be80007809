import LeakAuditModel
import XCTest

@testable import LeakAuditCore

/// How the steps of a retaining path are named from the target's symbols.
final class RetainerNamingTests: XCTestCase {
    /// Symbols at fixed addresses: code at 0x1000 (a closure), an async function pointer at 0x2000,
    /// and a variable that is no closure's at 0x3000.
    private struct FixedSymbolizer: AddressSymbolizer {
        func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] {
            let function = returnAddress == 0x1001 ? "closure #1 in App.Screen.init() -> App.Screen" : nil
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

    func testAClosureContextIsNamedByItsCodeOrAsyncFunctionPointerAndNothingElse() {
        XCTAssertEqual(contextName(code: 0x1000), "context of closure #1 in App.Screen.init()")
        XCTAssertEqual(contextName(code: 0x2000), "context of closure #2 in App.Screen.load()")
        // The word beside the context was another constant (an empty array's storage), not its code.
        XCTAssertEqual(contextName(code: 0x3000), "closure context")
        XCTAssertEqual(contextName(code: 0x4000), "closure context")
    }
}
