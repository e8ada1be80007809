// A presented screen gets a dismissal closure from its owner. The leaky version captures the
// owner (the flow) strongly while the flow keeps the screen: a retain cycle, so neither the flow
// nor the sheet's view model ever goes away. The clean twin captures the flow weakly.
import LeakMonitor

final class SheetViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    var onDismiss: (() -> Void)?
    init() { MemoryLeakMonitor.validate(self) }
    func dismissTapped() { onDismiss?() }
}

final class CheckoutFlow: MemoryLeakMonitorable {
    var max: Int { 1 }
    var sheet: SheetViewModel?
    private(set) var finished = false
    init() { MemoryLeakMonitor.validate(self) }

    func presentSheet(capturingWeakly: Bool) {
        let sheet = SheetViewModel()
        if capturingWeakly {
            sheet.onDismiss = { [weak self] in self?.finish() }
        } else {
            sheet.onDismiss = { self.finish() }
        }
        self.sheet = sheet
    }

    func finish() { finished = true }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
for _ in 1...2 {
    let flow = CheckoutFlow()
    flow.presentSheet(capturingWeakly: !leaky)
    flow.sheet?.dismissTapped()
}
print("DismissalCapture: ran 2 checkout flows")
