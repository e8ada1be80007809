// What an XCTest test case object keeps: XCTest keeps every test case until the run ends, so a
// property set in setUp or in a test outlives its test without the code under test leaking it.
// CartTests keeps its cart in a property set in setUp, its formatter in a lazy var, and its
// receipt in a property a test sets (kept by the test case: reported apart, not failing); its
// testCartCycleLeaks makes a cycle the test case also holds (still a leak: the cycle outlives the
// test case), and testRegistersCart hands its cart to a global registry (a leak). CartTearDownTests
// is the clean twin: its tearDown lets everything go.
import XCTest

final class Cart {
    var items: [CartItem] = []
    var isOpen = true
    var openedAt = Date()
    init() {}
}

final class CartItem {
    var cart: Cart?
    var title: String
    init(title: String) { self.title = title }
}

final class PriceFormatter {
    var currency = "EUR"
}

final class Receipt {
    var lines: [String] = []
}

enum CartRegistry {
    nonisolated(unsafe) static var carts: [Cart] = []
}

final class CartTests: XCTestCase {
    var cart: Cart!
    lazy var formatter = PriceFormatter()
    var receipt: Receipt?

    override func setUp() {
        super.setUp()
        cart = Cart()
    }

    func testAddsItem() {
        cart.items.append(CartItem(title: "book"))
        XCTAssertEqual(formatter.currency, "EUR")
        receipt = Receipt()
    }

    func testCartCycleLeaks() {
        let item = CartItem(title: "pen")
        item.cart = cart
        cart.items.append(item)
        XCTAssertEqual(cart.items.count, 1)
    }

    func testRegistersCart() {
        CartRegistry.carts.append(cart)
        XCTAssertEqual(CartRegistry.carts.count, 1)
    }
}

final class CartTearDownTests: XCTestCase {
    var cart: Cart!
    lazy var formatter: PriceFormatter? = PriceFormatter()

    override func setUp() {
        super.setUp()
        cart = Cart()
    }

    override func tearDown() {
        cart = nil
        formatter = nil
        super.tearDown()
    }

    func testAddsItem() {
        cart.items.append(CartItem(title: "book"))
        XCTAssertEqual(formatter?.currency, "EUR")
    }
}

/// What its test case object keeps in its own properties only (a property set in setUp, a lazy var,
/// a property the test sets): a process whose last test left this waits for no grace period,
/// since XCTest keeps its test case objects until the run ends.
final class CartKeptTests: XCTestCase {
    var cart: Cart!
    lazy var formatter = PriceFormatter()
    var receipt: Receipt?

    override func setUp() {
        super.setUp()
        cart = Cart()
    }

    func testKeepsWhatItsPropertiesHold() {
        XCTAssertEqual(formatter.currency, "EUR")
        receipt = Receipt()
        XCTAssertTrue(cart.isOpen)
    }
}

/// Work its tests leave in flight for 200 ms beside what its test case object keeps: the cart's
/// item, held through the cart until the work empties the cart, and a receipt the work alone
/// holds. A process whose last test left either waits for the grace period, and the work releases
/// them within it: no leak. CartKeptTests is the twin that waits for nothing.
final class CartInFlightTests: XCTestCase {
    var cart: Cart!

    override func setUp() {
        super.setUp()
        cart = Cart()
    }

    func testEmptiesCartLater() {
        cart.items.append(CartItem(title: "vase"))
        let cart = self.cart!
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { cart.items.removeAll() }
    }

    func testSendsReceiptLater() {
        cart.items.append(CartItem(title: "lamp"))
        let receipt = Receipt()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { withExtendedLifetime(receipt) {} }
    }
}

/// Its test case keeps its cart; its test leaves a receipt to work in flight for a second. At the
/// end of the run the process waits while the receipt is alive, and then for nothing more: what is
/// left then is what the test case object's property keeps.
final class CartAfterWorkTests: XCTestCase {
    var cart: Cart!

    override func setUp() {
        super.setUp()
        cart = Cart()
    }

    func testSendsReceiptInASecond() {
        let receipt = Receipt()
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(1)) { withExtendedLifetime(receipt) {} }
        XCTAssertTrue(cart.isOpen)
    }
}

final class CheckoutLedger {
    var entries = 0
}

final class Coupon {
    let code: String
    init(code: String) { self.code = code }
}

final class Checkout {
    let ledger = CheckoutLedger()
    var coupon: Coupon?
}

/// Its test case object keeps a checkout in a property set in setUp, and the checkout its ledger
/// in a `let`: nothing can release either before the run ends, so a process whose last test it
/// is waits for no grace period. With FIXTURE_COUPON set, the test also gives the checkout a coupon
/// (a `var`) that work it leaves in flight takes back 1.5 s later: that is waited for, and
/// released within the grace period.
final class CheckoutKeptTests: XCTestCase {
    var checkout: Checkout!

    override func setUp() {
        super.setUp()
        checkout = Checkout()
    }

    func testKeepsTheCheckoutsLedger() {
        checkout.ledger.entries += 1
        XCTAssertEqual(checkout.ledger.entries, 1)
        guard ProcessInfo.processInfo.environment["FIXTURE_COUPON"] != nil else { return }
        checkout.coupon = Coupon(code: "SPRING")
        let checkout = self.checkout!
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1500)) { checkout.coupon = nil }
    }
}
