import CLeakMonitorShim
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Counts live instances of ``MemoryLeakMonitorable`` types and reports those over budget.
///
/// Counts are exact from any number of threads: an instance counts from its ``validate(_:)`` until
/// the runtime deallocates it (right after `deinit`), which the library observes in the Swift
/// runtime itself, so
/// no weak references are rescanned and `validate` costs the same however many instances live.
public enum MemoryLeakMonitor {
    /// Live and peak counts of one tracked type.
    public struct TypeCount: Sendable, Hashable {
        /// The type's report name.
        public var typeName: String
        /// The type's budget.
        public var max: Int
        /// Instances alive now.
        public var live: Int
        /// The most instances alive at once since the first validation or ``resetPeaks()``.
        public var peak: Int
    }

    private static let handler = Mutex<ViolationHandler>(.stopInDebugBuilds)
    /// The handler's case, read without locking on every violation: under many threads a lock
    /// taken per over-budget `validate` collapsed (64 threads on 2 cores took seconds). Only a
    /// `.custom` handler, whose closure must be read whole, is read under the lock.
    private static let handlerKind = Atomic<UInt8>(HandlerKind.stopInDebugBuilds.rawValue)

    private enum HandlerKind: UInt8 {
        case stopInDebugBuilds, stop, log, ignore, custom

        init(_ handler: ViolationHandler) {
            switch handler {
            case .stopInDebugBuilds: self = .stopInDebugBuilds
            case .stop: self = .stop
            case .log: self = .log
            case .ignore: self = .ignore
            case .custom: self = .custom
            }
        }
    }

    /// What happens when a type goes over its budget in a process leak-audit did not start.
    public static var violationHandler: ViolationHandler {
        get { handler.withLock { $0 } }
        set {
            handler.withLock {
                $0 = newValue
                handlerKind.store(HandlerKind(newValue).rawValue, ordering: .releasing)
            }
        }
    }

    /// True when `leak-audit run` started this process and records every validation.
    public static var isAttachedToLeakAudit: Bool { leakaudit_is_attached() }

    /// True when deallocations are observed, so that live counts go down again.
    ///
    /// False only when the Swift runtime is linked statically (`-static-stdlib`): then no budget
    /// is checked, because every instance would look alive forever.
    public static var observesDeallocations: Bool { leakaudit_observes_deallocations() }

    /// Counts `instance` against its dynamic type's budget; call it at the end of `init`.
    ///
    /// Calling it again for the same instance (from a subclass initializer, say) counts it once.
    public static func validate<Instance: MemoryLeakMonitorable>(_ instance: Instance) {
        var object = UnsafeRawPointer(Unmanaged.passUnretained(instance).toOpaque())
        var prepared = false
        while true {
            // Every instance is tracked through this one call, so that the same code above it gives
            // the same stack, its type's first instance included. Nearly every call: a registered
            // type with its code's budget, within it. Anything else goes out of line with what the
            // shim returned, which names the object again: nothing is kept across the call, so an
            // optimized build saves no register here (12 instructions a call less than when this
            // generic function kept the instance, its type and its conformance for its rare ways).
            let result = leakaudit_track_registered(object)
            if _fastPath(result.live_over_budget == 0) { return }
            guard let again = tracksAgain(after: result, prepared: prepared) else { return }
            prepared = true
            object = again
        }
    }

    /// `validate`'s ways when the shim did not count the object of `result` within its budget:
    /// reports it over budget, or prepares its type (at most once: `prepared` says it was) and
    /// returns the object for validate to call the shim with again, or tracks it the general way.
    @inline(never)
    private static func tracksAgain(after result: leakaudit_fast_track_result, prepared: Bool) -> UnsafeRawPointer? {
        let object = Unmanaged<AnyObject>.fromOpaque(result.object).takeUnretainedValue()
        if result.live_over_budget > 0 {
            let typeID = leakaudit_type_lookup(metadata(of: type(of: object)))
            report(typeID: typeID, max: budget(ofTypeID: typeID), liveCount: Int(result.live_over_budget))
            return nil
        }
        // The conformance validate was called with, found again from the object's dynamic type (a
        // class conforms once, itself or through a superclass): once per type, to register it.
        guard let instance = object as? any MemoryLeakMonitorable else { return nil }
        if prepared {
            // The shim still declines it (its budget could not be claimed): the general way.
            validateSlowly(instance)
            return nil
        }
        return prepare(instance) ? result.object : nil
    }

    /// The budget type `typeID` is counted against.
    private static func budget(ofTypeID typeID: Int32) -> Int {
        var counts = leakaudit_type_counts()
        return leakaudit_type_counts_get(typeID, &counts) ? Int(counts.max) : 0
    }

    /// What `leakaudit_track_registered` needs before it takes `instance`: its type registered, at
    /// its first validation, or, for a type leak-audit watched through a budget pattern or its census
    /// first, the budget its code declares. False when the type cannot be tracked (the table is full).
    @inline(never)
    private static func prepare<Instance: MemoryLeakMonitorable>(_ instance: Instance) -> Bool {
        let metadata = metadata(of: type(of: instance))
        let typeID = leakaudit_type_lookup(metadata)
        if typeID < 0 { return register(instance, metadata: metadata) >= 0 }
        claim(instance, typeID: typeID)
        return true
    }

    /// The metadata pointer of a class, by which the shim keys its types.
    @inline(__always)
    private static func metadata(of type: AnyObject.Type) -> UnsafeRawPointer { unsafeBitCast(type, to: UnsafeRawPointer.self) }

    /// `validate` through `leakaudit_track`, for a type whose code's budget could not be claimed.
    @inline(never)
    private static func validateSlowly<Instance: MemoryLeakMonitorable>(_ instance: Instance) {
        let metadata = metadata(of: type(of: instance))
        let typeID = leakaudit_type_lookup(metadata)
        guard typeID >= 0 else { return }
        let result = leakaudit_track(Unmanaged.passUnretained(instance).toOpaque(), typeID)
        if result.claim_needed {
            // leak-audit watched this type through a budget pattern or its census first.
            claim(instance, typeID: typeID)
        }
        if result.inserted && result.live > result.max {
            report(typeID: typeID, max: Int(result.max), liveCount: Int(result.live))
        }
    }

    /// The counts of every type validated so far, in order of first validation.
    public static func counts() -> [TypeCount] {
        (0..<leakaudit_type_count()).compactMap(count(ofTypeID:))
    }

    /// Instances of `type` alive now (exactly `type`, not its subclasses); 0 for a type never validated.
    public static func liveCount(of type: AnyObject.Type) -> Int {
        count(of: type)?.live ?? 0
    }

    /// The most instances of `type` alive at once since its first validation or ``resetPeaks()``.
    public static func peakCount(of type: AnyObject.Type) -> Int {
        count(of: type)?.peak ?? 0
    }

    /// Starts every type's peak again from its current live count, for tests that measure a phase.
    public static func resetPeaks() {
        leakaudit_reset_peaks()
    }

    private static func count(of type: AnyObject.Type) -> TypeCount? {
        count(ofTypeID: leakaudit_type_lookup(metadata(of: type)))
    }

    private static func count(ofTypeID typeID: Int32) -> TypeCount? {
        var counts = leakaudit_type_counts()
        guard leakaudit_type_counts_get(typeID, &counts) else { return nil }
        return TypeCount(typeName: name(ofTypeID: typeID), max: Int(counts.max), live: Int(counts.live), peak: Int(counts.peak))
    }

    private static func name(ofTypeID typeID: Int32) -> String {
        var length = 0
        guard let bytes = leakaudit_type_name(typeID, &length) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    /// Makes the code's name and budget the type's, once per type.
    private static func claim<Instance: MemoryLeakMonitorable>(_ instance: Instance, typeID: Int32) {
        let name = instance.leakReportName.utf8CString
        let max = Int64(Swift.max(instance.max, 0))
        name.withUnsafeBufferPointer { bytes in
            if let start = bytes.baseAddress { leakaudit_type_claim(typeID, start, bytes.count - 1, max) }
        }
    }

    /// Registers a type at its first validation: the slow path, once per dynamic type.
    private static func register<Instance: MemoryLeakMonitorable>(_ instance: Instance, metadata: UnsafeRawPointer) -> Int32 {
        let name = instance.leakReportName
        let max = Int64(Swift.max(instance.max, 0))  // a negative budget allows none
        let typeID =
            name.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.withMemoryRebound(to: CChar.self) { leakaudit_type_register(metadata, $0.baseAddress!, $0.count, max) }
            }
            ?? Array(name.utf8CString).withUnsafeBufferPointer {
                leakaudit_type_register(metadata, $0.baseAddress!, $0.count - 1, max)
            }
        if typeID >= 0 && !leakaudit_observes_deallocations() {
            warnOnceDeallocationsInvisible()
        }
        return typeID
    }

    private static let warnedAboutStaticRuntime = Atomic<Bool>(false)

    private static func warnOnceDeallocationsInvisible() {
        guard !warnedAboutStaticRuntime.exchange(true, ordering: .relaxed) else { return }
        writeToStandardError(
            "LeakMonitor: cannot observe deallocations (the Swift runtime is linked statically); budgets are not checked\n"
        )
    }

    /// Hands a violation to the handler; the violation (and its type's name) is made only when the
    /// handler uses it.
    private static func report(typeID: Int32, max: Int, liveCount: Int) {
        // Without observed deallocations every instance looks alive forever: no false alarms.
        guard leakaudit_observes_deallocations() else { return }
        let kind = HandlerKind(rawValue: handlerKind.load(ordering: .acquiring)) ?? .stopInDebugBuilds
        func violation() -> Violation { Violation(typeName: name(ofTypeID: typeID), max: max, liveCount: liveCount) }
        // Under leak-audit nothing stops the process: its run, and its report, must go on.
        switch kind {
        case .stopInDebugBuilds:
            #if DEBUG
                if !leakaudit_is_under_leak_audit() { fatalError(violation().description) }
            #endif
        case .stop:
            if !leakaudit_is_under_leak_audit() { fatalError(violation().description) }
        case .log:
            writeToStandardError("LeakMonitor: \(violation().description)\n")
        case .ignore:
            break
        case .custom:
            // Read whole under the lock; a handler set since the kind was read runs instead.
            switch violationHandler {
            case .custom(let body): body(violation())
            case .log: writeToStandardError("LeakMonitor: \(violation().description)\n")
            case .stop, .stopInDebugBuilds, .ignore: break
            }
        }
    }

    private static func writeToStandardError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }
}
