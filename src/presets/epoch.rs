//! Where a run's t = 0 falls on the wall clock, for the presets whose peer reads the
//! wall clock and so lines its windows (or its ticks) up with the Unix epoch.
//!
//! A plain value handed to a preset when it is built; it reads no clock. The simulator
//! takes it from a trace of absolute times (its `origin`, or its earliest request) and
//! otherwise leaves it at [`EpochOffset::ZERO`]: a generated stream's t = 0 stands for
//! an instant on every grid the epoch has (a whole second, minute, day…).

/// The instant the simulation's t = 0 stands for, in nanoseconds since the Unix epoch
/// (negative before 1970).
///
/// ```
/// use ratesim::presets::EpochOffset;
/// // 2023-11-14T22:13:20Z, in a grid of minutes: 20 s past a whole minute.
/// let at = EpochOffset::from_nanos(1_700_000_000_000_000_000);
/// assert_eq!(at.phase(60_000_000_000), 20_000_000_000);
/// assert_eq!(EpochOffset::from_nanos(-1).phase(10), 9, "the grid goes on before 1970");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EpochOffset(i128);

impl EpochOffset {
    /// t = 0 is the epoch itself, or any instant on its grids: how a preset built without
    /// an offset reads the simulation's clock.
    pub const ZERO: EpochOffset = EpochOffset(0);

    /// t = 0 at `ns` nanoseconds since the Unix epoch.
    pub const fn from_nanos(ns: i128) -> EpochOffset {
        EpochOffset(ns)
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn as_nanos(self) -> i128 {
        self.0
    }

    /// How far t = 0 lies past the last multiple of `step` ns since the epoch:
    /// `offset mod step`, in `[0, step)` (a `step` of 0 is read as 1).
    pub fn phase(self, step: u64) -> u64 {
        let step = i128::from(step.max(1));
        u64::try_from(self.0.rem_euclid(step)).unwrap_or(0)
    }

    /// Which multiple of `step` ns since the epoch t = 0 lies in: `⌊offset / step⌋`
    /// (a `step` of 0 is read as 1).
    pub fn cell(self, step: u64) -> i128 {
        self.0.div_euclid(i128::from(step.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_and_a_cell_split_the_offset_on_any_grid() {
        for ns in [
            0i128,
            7,
            -7,
            1_700_000_000_123_456_789,
            i128::from(u64::MAX) * 3,
        ] {
            for step in [1u64, 2, 1_000_000, 60_000_000_000, u64::MAX] {
                let o = EpochOffset::from_nanos(ns);
                assert!(o.phase(step) < step, "{ns} on {step}");
                assert_eq!(
                    o.cell(step) * i128::from(step) + i128::from(o.phase(step)),
                    ns
                );
            }
        }
        assert_eq!(EpochOffset::from_nanos(5).phase(0), 0, "a step of 0 is 1");
    }
}
