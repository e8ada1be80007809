// Swift Testing's parameterized tests under leak-audit: `checksInvoice`'s arguments are invoices
// its `arguments:` expression makes, which the runner evaluates while it plans the run and keeps
// in its plan until the run ends: the harness keeps them, the test is not blamed for them.
// `archivesInvoice` is its leaky twin: each of its cases keeps an invoice of its own in a static
// list, and the test is blamed for both.
import Synchronization
import Testing

final class Invoice: Sendable, CustomTestStringConvertible {
    let amount: Int
    init(amount: Int) { self.amount = amount }
    var testDescription: String { "Invoice(\(amount))" }
}

enum InvoiceArchive {
    static let kept = Mutex<[Invoice]>([])
}

@Suite struct ParameterizedSwiftTests {
    @Test(arguments: [Invoice(amount: 10), Invoice(amount: 20), Invoice(amount: 30)])
    func checksInvoice(_ invoice: Invoice) {
        #expect(invoice.amount > 0)
    }

    @Test(arguments: [40, 50])
    func archivesInvoice(amount: Int) {
        let invoice = Invoice(amount: amount)
        InvoiceArchive.kept.withLock { $0.append(invoice) }
        #expect(invoice.amount == amount)
    }
}
