// A package's own module whose name starts with an underscore, as many packages name the modules
// they keep apart (`_CryptoExtras`, `_NIOFileSystem`): its types are the package's, never the
// toolchain's. UnreachableShapes' `private-module` shape leaks its cycles.

public final class Gear {
    var axle: Axle?
}

public final class Axle {
    var gear: Gear?
    weak var weakGear: Gear?
}

/// Makes `count` cycles Gear.axle → Axle.gear → Gear (with `leaky`; else the axle's reference back
/// is weak) that nothing else holds once it returns.
@inline(never)
public func makeGearCycles(_ count: Int, leaky: Bool) -> Int {
    for _ in 0..<count {
        let gear = Gear()
        let axle = Axle()
        gear.axle = axle
        if leaky { axle.gear = gear } else { axle.weakGear = gear }
    }
    return count
}
