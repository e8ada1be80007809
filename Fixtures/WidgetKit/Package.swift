// swift-tools-version:6.0
// A library built as a shared object (libWidgetKit.so) whose type is tracked: leak-audit must
// count it and symbolize frames inside the shared object.
import PackageDescription

let package = Package(
    name: "WidgetKit",
    products: [.library(name: "WidgetKit", type: .dynamic, targets: ["WidgetKit"])],
    dependencies: [.package(name: "leak-audit", path: "../..")],
    targets: [
        .target(name: "WidgetKit", dependencies: [.product(name: "LeakMonitor", package: "leak-audit")])
    ],
    swiftLanguageModes: [.v5]
)
